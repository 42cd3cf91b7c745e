"""Sequential Elo ratings: Fischl's improved Elo and the rapid/blitz ratings (METHODS.md §2).

Games are rated one at a time in date order. Each player's expected score comes from the
logistic curve with FIDE's cap on the rating difference; the change is ``K·(S − E)`` with
each player's own K, so with unequal K the sum of ratings is not conserved.
"""

from __future__ import annotations

import bisect
import math
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

import pandas as pd

from site_builder.model import GameRecord, PgnDate


def expected_score(own: float, opponent: float, cap: float = 400.0) -> float:
    """Expected score of ``own`` against ``opponent``; the difference is capped at ±``cap``.

    >>> expected_score(2700, 2700)
    0.5
    >>> round(expected_score(2800, 2000), 4) == round(expected_score(2400, 2000), 4)
    True
    """
    if cap <= 0:
        raise ValueError(f"cap must be positive, got {cap}")
    diff = max(-cap, min(cap, own - opponent))
    return 1.0 / (1.0 + math.pow(10.0, -diff / 400.0))


def improved_k(gm: int, numerator: float = 1200.0, gm_min: int = 70, gm_max: int = 150) -> float:
    """Fischl's individual K = numerator / gm, gm (games in the last two years) clamped.

    With the defaults K runs from 1200/150 = 8 to 1200/70 ≈ 17.14.
    """
    if gm_min > gm_max:
        raise ValueError(f"gm_min ({gm_min}) must not exceed gm_max ({gm_max})")
    if gm < 0:
        raise ValueError(f"gm must be a count of games, got {gm}")
    return numerator / min(max(gm, gm_min), gm_max)


_NUMBERS = re.compile(r"\d+")


def round_key(text: str) -> tuple[int, ...]:
    """Order of a Round tag: "9.7" → (9, 7); "?" → ()."""
    return tuple(int(n) for n in _NUMBERS.findall(text or ""))


def game_order(game: GameRecord) -> tuple[float, int, tuple[int, ...], str, int]:
    """Date order: month (mid-year when unknown), day (0 when unknown), round, file, line."""
    months = game.date.months
    return (
        months if months is not None else float("inf"),
        game.date.day or 0,
        round_key(game.round),
        game.source,
        game.line,
    )


@dataclass(frozen=True)
class RatedGame:
    """What the rating needs of one game."""

    game_id: str
    white: str
    black: str
    #: White's score: 1, 0.5 or 0.
    score: float
    #: Months since year 0 (see :attr:`PgnDate.months`), for the gm window.
    months: float
    year: int
    white_elo: int | None = None
    black_elo: int | None = None
    #: ISO date for charts: an unknown month is July 1st, an unknown day the 15th.
    date: str = ""


def chart_date(date: PgnDate) -> str:
    """A PgnDate as an ISO date for a chart axis (mid-year or mid-month when unknown)."""
    if date.year is None:
        return ""
    if date.month is None:
        return f"{date.year:04d}-07-01"
    return f"{date.year:04d}-{date.month:02d}-{date.day or 15:02d}"


def rated_games(games: Iterable[GameRecord], time_class: str, since: int = 0) -> list[RatedGame]:
    """Dated, finished games of one class from ``since`` on, in date order."""
    chosen = [
        g
        for g in games
        if g.time_class == time_class
        and g.score_white is not None
        and g.date.year is not None
        and g.date.year >= since
    ]
    out = []
    for g in sorted(chosen, key=game_order):
        score, months, year = g.score_white, g.date.months, g.date.year
        assert score is not None and months is not None and year is not None
        out.append(
            RatedGame(
                g.game_id,
                g.white,
                g.black,
                score,
                months,
                year,
                g.white_elo,
                g.black_elo,
                chart_date(g.date),
            )
        )
    return out


UPDATE_COLUMNS = [
    "game_id",
    "order",
    "player",
    "opponent",
    "white",
    "score",
    "year",
    "months",
    "date",
    "before",
    "opponent_before",
    "expected",
    "gm",
    "k",
    "after",
    "started",
]


@dataclass
class _State:
    """The running state of a sequential rating before one game (a checkpoint)."""

    ratings: dict[str, float] = field(default_factory=dict)
    last_seen: dict[str, float] = field(default_factory=dict)
    recent: dict[str, tuple[float, ...]] = field(default_factory=dict)

    def copy(self) -> _State:
        return _State(dict(self.ratings), dict(self.last_seen), dict(self.recent))


@dataclass
class EloRun:
    """A finished sequential run, kept so that the next build can resume it.

    ``checkpoints`` hold the state before the first game of every month; ``resumed_at`` is
    the index of the first game this run rated itself (0: from scratch).
    """

    games: tuple[RatedGame, ...]
    rows: list[dict[str, object]]
    checkpoints: list[tuple[int, _State]]
    resumed_at: int = 0

    @property
    def updates(self) -> pd.DataFrame:
        return pd.DataFrame(self.rows, columns=UPDATE_COLUMNS)


def _common_prefix(a: Sequence[RatedGame], b: Sequence[RatedGame]) -> int:
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        n += 1
    return n


def sequential_run(
    games: Sequence[RatedGame],
    k_of_gm: Callable[[int], float],
    start_elo: float,
    cap: float = 400.0,
    gm_months: float = 24.0,
    reseed_months: float = 0.0,
    previous: EloRun | None = None,
) -> EloRun:
    """Rate ``games`` in the given order, as :func:`sequential_elo`.

    With ``previous`` (a run of the same rules over an earlier game list), the games up to
    the first one that differs (in date order: the earliest new, changed or removed game)
    are taken over, and the rating resumes from the last monthly checkpoint before it. The
    result equals a run from scratch (tested).
    """
    games = tuple(games)
    state, begin = _State(), 0
    rows: list[dict[str, object]] = []
    checkpoints: list[tuple[int, _State]] = []
    if previous is not None:
        same = _common_prefix(previous.games, games)
        usable = [(i, st) for i, st in previous.checkpoints if i <= same]
        if usable:
            begin, saved = usable[-1]
            state = saved.copy()
            checkpoints = [(i, st) for i, st in usable[:-1]]
            rows = [r for r in previous.rows if int(r["order"]) < begin]  # type: ignore[call-overload]
    ratings, last_seen, recent = state.ratings, state.last_seen, state.recent
    for order in range(begin, len(games)):
        g = games[order]
        if order == 0 or games[order - 1].months != g.months or order == begin:
            checkpoints.append((order, _State(dict(ratings), dict(last_seen), dict(recent))))
        started: dict[str, str] = {}
        for name, tag in ((g.white, g.white_elo), (g.black, g.black_elo)):
            if name not in ratings:
                ratings[name] = float(tag) if tag is not None else float(start_elo)
                started[name] = "Elo tag" if tag is not None else "start value"
            elif (
                reseed_months > 0
                and tag is not None
                and g.months - last_seen[name] >= reseed_months
            ):
                ratings[name] = float(tag)
                started[name] = "Elo tag after a gap"
            last_seen[name] = g.months
        before = {g.white: ratings[g.white], g.black: ratings[g.black]}
        for name, opp, white, score in (
            (g.white, g.black, True, g.score),
            (g.black, g.white, False, 1.0 - g.score),
        ):
            window = [m for m in recent.get(name, ()) if m > g.months - gm_months]
            window.append(g.months)
            recent[name] = tuple(window)
            gm = len(window)
            k = k_of_gm(gm)
            expected = expected_score(before[name], before[opp], cap)
            after = before[name] + k * (score - expected)
            ratings[name] = after
            rows.append(
                {
                    "game_id": g.game_id,
                    "order": order,
                    "player": name,
                    "opponent": opp,
                    "white": white,
                    "score": score,
                    "year": g.year,
                    "months": g.months,
                    "date": g.date,
                    "before": before[name],
                    "opponent_before": before[opp],
                    "expected": expected,
                    "gm": gm,
                    "k": k,
                    "after": after,
                    "started": started.get(name, ""),
                }
            )
    return EloRun(games, rows, checkpoints, begin)


def run_to(run: EloRun, months: float) -> EloRun:
    """``run`` over its games up to ``months`` alone: the games are in date order, month
    first, so they are its first ones, and a game's rows depend on the games before it, so
    their rows and checkpoints are ``run``'s (each game has two rows). Equal to a run from
    scratch over them (tested)."""
    n = bisect.bisect_right(run.games, months, key=lambda g: g.months)
    return EloRun(
        run.games[:n],
        run.rows[: 2 * n],
        [(i, state) for i, state in run.checkpoints if i < n],
    )


def sequential_elo(
    games: Sequence[RatedGame],
    k_of_gm: Callable[[int], float],
    start_elo: float,
    cap: float = 400.0,
    gm_months: float = 24.0,
    reseed_months: float = 0.0,
) -> pd.DataFrame:
    """Rate ``games`` in the given order; one row per (game, player).

    ``gm`` is the player's number of games in the ``gm_months`` up to and including this one
    (games of the same sequence, counted at the time of the game). A player's first rating is
    their Elo tag in their first game, else ``start_elo`` (``started`` says which). With
    ``reseed_months`` > 0, a player back after that long a gap restarts at their Elo tag.
    """
    return sequential_run(games, k_of_gm, start_elo, cap, gm_months, reseed_months).updates


def rating_at(updates: pd.DataFrame, months: float | None = None) -> dict[str, float]:
    """Each player's rating after their last game up to ``months`` (all games when None)."""
    if updates.empty:
        return {}
    rows = updates if months is None else updates[updates["months"] <= months]
    last = rows.sort_values("order", kind="stable").groupby("player", sort=True).tail(1)
    return {str(p): float(a) for p, a in zip(last["player"], last["after"], strict=True)}


def year_end_ratings(updates: pd.DataFrame) -> pd.DataFrame:
    """Per (player, year played): the rating after the player's last game of that year."""
    if updates.empty:
        return pd.DataFrame(columns=["player", "year", "rating", "games"])
    ordered = updates.sort_values("order", kind="stable")
    grouped = ordered.groupby(["player", "year"], sort=True)
    out = grouped.agg(rating=("after", "last"), games=("after", "size")).reset_index()
    return out
