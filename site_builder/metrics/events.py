"""Standings and crosstables of an event, and FIDE performance ratings (pure)."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from site_builder.metrics.elo_fill import PlayerElo
from site_builder.model import GameRecord

# FIDE rating difference dp for a fractional score p (FIDE Handbook B.02, table 8.1a),
# for p = 0.00, 0.01, ..., 1.00.
_DP = [
    -800,
    -677,
    -589,
    -538,
    -501,
    -470,
    -444,
    -422,
    -401,
    -383,
    -366,
    -351,
    -336,
    -322,
    -309,
    -296,
    -284,
    -273,
    -262,
    -251,
    -240,
    -230,
    -220,
    -211,
    -202,
    -193,
    -184,
    -175,
    -166,
    -158,
    -149,
    -141,
    -133,
    -125,
    -117,
    -110,
    -102,
    -95,
    -87,
    -80,
    -72,
    -65,
    -57,
    -50,
    -43,
    -36,
    -29,
    -21,
    -14,
    -7,
    0,
    7,
    14,
    21,
    29,
    36,
    43,
    50,
    57,
    65,
    72,
    80,
    87,
    95,
    102,
    110,
    117,
    125,
    133,
    141,
    149,
    158,
    166,
    175,
    184,
    193,
    202,
    211,
    220,
    230,
    240,
    251,
    262,
    273,
    284,
    296,
    309,
    322,
    336,
    351,
    366,
    383,
    401,
    422,
    444,
    470,
    501,
    538,
    589,
    677,
    800,
]


def fide_dp(p: float) -> int:
    """FIDE's dp for score fraction p, rounded to the table's hundredths."""
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"score fraction p must lie in [0, 1], got {p}")
    return _DP[round(p * 100)]


def performance(opponent_elos: Sequence[int], score: float) -> float | None:
    """FIDE performance: average opponent rating + dp(score / games); None without ratings."""
    if not opponent_elos:
        return None
    avg = sum(opponent_elos) / len(opponent_elos)
    return avg + fide_dp(score / len(opponent_elos))


@dataclass(frozen=True)
class Performance:
    """A FIDE performance with what it rests on: ``value`` is None below ``min_games``
    rated games, and ``reason`` then says why."""

    value: float | None
    #: Games against an opponent with an Elo (tagged or filled).
    rated_games: int
    #: Of those, opponents whose Elo was filled from another game.
    filled: int
    reason: str = ""

    @property
    def note(self) -> str:
        """What the figure rests on, or why it is n/a."""
        if self.value is None:
            return self.reason
        return f"{self.rated_games} rated games, {self.filled} Elo tags filled"


def performance_figure(
    opponent_elos: Sequence[int], score: float, filled: int, min_games: int
) -> Performance:
    """:func:`performance` when at least ``min_games`` games have a rated opponent."""
    n = len(opponent_elos)
    if n < min_games:
        reason = (
            f"n/a: {n} game{'s' if n != 1 else ''} against a rated opponent "
            f"({filled} Elo tag{'s' if filled != 1 else ''} filled), "
            f"below the minimum of {min_games}"
        )
        return Performance(None, n, filled, reason)
    return Performance(performance(opponent_elos, score), n, filled)


@dataclass
class Standing:
    player: str
    points: float = 0.0
    games: int = 0
    elos: list[int] = field(default_factory=list)
    #: Opponents' Elos, tagged or filled (see :mod:`site_builder.metrics.elo_fill`).
    opponent_elos: list[int] = field(default_factory=list)
    rated_points: float = 0.0  # points against rated opponents
    #: Opponent Elos filled from another game.
    filled: int = 0

    @property
    def elo(self) -> int | None:
        return round(sum(self.elos) / len(self.elos)) if self.elos else None

    @property
    def performance(self) -> float | None:
        return performance(self.opponent_elos, self.rated_points)

    def performance_figure(self, min_games: int) -> Performance:
        return performance_figure(self.opponent_elos, self.rated_points, self.filled, min_games)


def standings(
    games: Sequence[GameRecord], elos: Mapping[tuple[str, str], PlayerElo] | None = None
) -> list[Standing]:
    """Points and games per player (unfinished games '*' are not scored), best first.

    ``elos`` (from :func:`~site_builder.metrics.elo_fill.fill_elos`) gives the opponents'
    Elos with missing tags filled; without it only the games' own tags count. A player's
    own Elo column is the mean of their own tags."""
    table: dict[str, Standing] = {}
    for g in games:
        score = g.score_white
        if score is None:
            continue
        for name, opponent, elo, opp_tag, pts in (
            (g.white, g.black, g.white_elo, g.black_elo, score),
            (g.black, g.white, g.black_elo, g.white_elo, 1.0 - score),
        ):
            s = table.setdefault(name, Standing(name))
            s.points += pts
            s.games += 1
            if elo is not None:
                s.elos.append(elo)
            opp = elos.get((g.game_id, opponent)) if elos is not None else None
            if opp is None and opp_tag is not None:
                opp = PlayerElo(opp_tag)
            if opp is not None:
                s.opponent_elos.append(opp.elo)
                s.rated_points += pts
                s.filled += opp.filled
    return sorted(table.values(), key=lambda s: (-s.points, s.games, s.player))


def crosstable(games: Sequence[GameRecord], order: Sequence[str]) -> list[list[str]]:
    """Cell [i][j]: player i's results against j ("1", "½", "0", joined when several)."""
    cells: dict[tuple[str, str], list[str]] = defaultdict(list)
    sym = {1.0: "1", 0.5: "½", 0.0: "0"}
    for g in sorted(games, key=lambda g: (g.date.sort_key, g.round, g.game_id)):
        score = g.score_white
        if score is None:
            continue
        cells[(g.white, g.black)].append(sym[score])
        cells[(g.black, g.white)].append(sym[1.0 - score])
    return [["" if a == b else " ".join(cells.get((a, b), [])) for b in order] for a in order]


def round_label(round_tag: str) -> str:
    """The round of a game from its Round tag: "9.7" → "9" (board 7); "?" or "" → "?"."""
    head = (round_tag or "").strip().split(".")[0]
    return head if head.isdigit() else "?"


def round_table(
    games: Sequence[GameRecord], order: Sequence[str]
) -> tuple[list[str], list[list[str]]]:
    """The crosstable of a large (Swiss) event, round by round: the rounds (by number, "?"
    last) and, per player in ``order``, per round, the opponent's rank, the colour and the
    result, as in FIDE's tables ("12w1": beat number 12 with White; several games joined)."""
    rank = {p: i + 1 for i, p in enumerate(order)}
    sym = {1.0: "1", 0.5: "½", 0.0: "0"}
    cells: dict[tuple[str, str], list[str]] = defaultdict(list)
    found: set[str] = set()
    for g in sorted(games, key=lambda g: (g.date.sort_key, g.round, g.game_id)):
        score = g.score_white
        if score is None or g.white not in rank or g.black not in rank:
            continue
        r = round_label(g.round)
        found.add(r)
        cells[(g.white, r)].append(f"{rank[g.black]}w{sym[score]}")
        cells[(g.black, r)].append(f"{rank[g.white]}b{sym[1.0 - score]}")
    rounds = sorted(found, key=lambda r: (r == "?", int(r) if r.isdigit() else 0))
    return rounds, [[" ".join(cells.get((p, r), [])) for r in rounds] for p in order]
