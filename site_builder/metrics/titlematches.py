"""World-championship title matches in the content, their actual scores and Elo expectations.

A game is a title game when its file lies under one of the configured title folders, or when
its event name matches one of the configured patterns and none of the exclusions. Games are
grouped by event name and pair of players; an event of that name with more than two players
is a tournament or a knock-out, not a match, and is reported as such.

Which groups count as matches (the folder rule):

* When the title folders hold title games, the matches are the groups of those games. A
  group found by its event name elsewhere (say a player's career file) joins the folder match
  of the same event name, players and years with the games the folder lacks (the loader keeps
  the first copy of a game found twice, which may be the career file's; a copy with the same
  players, result and moves is the same game); any other such group is a *fragment*: the
  content holds some games of that match, and whether they are all of it cannot be known (the
  decisive score differs from match to match), so it is listed apart and not counted.
* When the title folders hold no title game, the two-player groups found by event name are
  the matches, each marked as found by its event name with the number of games it holds.
"""

from __future__ import annotations

import math
import re
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from site_builder.model import GameRecord, event_title


@dataclass(frozen=True)
class MatchGame:
    """What the check needs of one game of a match (plain values: results can be cached)."""

    game_id: str
    white: str
    black: str
    white_elo: int | None
    black_elo: int | None
    #: Months since year 0 (mid-year when unknown); None without a year.
    months: float | None


@dataclass(frozen=True)
class TitleMatch:
    """One title match: A is the player with the higher actual score (ties: by name)."""

    event: str
    year: int  # of the first game
    last_year: int
    player_a: str
    player_b: str
    games: tuple[MatchGame, ...]
    #: Games counted in the score (forfeits left out).
    scored: int
    score_a: float  # points
    forfeits: int
    #: "folder" (games of a title folder) or "event name" (found by its event name only).
    found_by: str = "folder"
    #: The files the games come from, relative to the games folder.
    sources: tuple[str, ...] = ()
    #: Drawn games among the scored ones.
    draws: int = 0

    @property
    def key(self) -> str:
        return event_title(self.event, self.year)

    @property
    def share_a(self) -> float:
        return self.score_a / self.scored if self.scored else math.nan

    @property
    def label(self) -> str:
        return f"{self.player_a} – {self.player_b} {self.year}"

    @property
    def note(self) -> str:
        """What the page should say of a match found by its event name only ("" otherwise)."""
        if self.found_by == "folder":
            return ""
        return (
            f"found by its event name: the content holds {len(self.games)} "
            f"game{'s' if len(self.games) != 1 else ''} of this match "
            f"({', '.join(self.sources)}), which may not be the whole match"
        )


@dataclass(frozen=True)
class TitleEvents:
    matches: list[TitleMatch]
    #: Events whose name marks a world championship but which are not counted as matches:
    #: tournaments and knock-outs, and the fragments below, with the reason.
    not_matches: list[tuple[str, int, str]] = field(default_factory=list)
    #: Two-player title events found by their event name outside the title folders while the
    #: folders hold the matches: parts of a match whose complete games are not in the content.
    fragments: list[TitleMatch] = field(default_factory=list)


def _relative(game: GameRecord, games_folder: str) -> str:
    prefix = games_folder.rstrip("/") + "/"
    return game.source[len(prefix) :] if game.source.startswith(prefix) else game.source


def in_title_folder(game: GameRecord, games_folder: str, folders: Sequence[str]) -> bool:
    rel = _relative(game, games_folder)
    return any(rel.startswith(f.rstrip("/") + "/") for f in folders)


def is_title_game(
    game: GameRecord,
    games_folder: str,
    folders: Sequence[str],
    patterns: Sequence[re.Pattern[str]],
    exclude: Sequence[re.Pattern[str]],
) -> bool:
    if in_title_folder(game, games_folder, folders):
        return True
    name = game.event or ""
    return any(p.search(name) for p in patterns) and not any(x.search(name) for x in exclude)


def is_forfeit(game: GameRecord, max_plies: int) -> bool:
    """A decisive game with at most ``max_plies`` half-moves (e.g. Fischer's "1.d4 0-1")."""
    return game.result in {"1-0", "0-1"} and game.plies <= max_plies


def title_matches(
    games: Sequence[GameRecord],
    games_folder: str,
    folders: Sequence[str],
    patterns: Sequence[str],
    exclude: Sequence[str],
    forfeit_max_plies: int,
) -> TitleEvents:
    """Every title match in the content, in date order (see the module's folder rule)."""
    inc = [re.compile(p, re.IGNORECASE) for p in patterns]
    exc = [re.compile(p, re.IGNORECASE) for p in exclude]
    in_folder: dict[str, list[GameRecord]] = defaultdict(list)
    by_name: dict[str, list[GameRecord]] = defaultdict(list)
    for g in games:
        if g.date.year is None:
            continue
        event = g.event or "(no event name)"
        if in_title_folder(g, games_folder, folders):
            in_folder[event].append(g)
        elif is_title_game(g, games_folder, folders, inc, exc):
            by_name[event].append(g)

    not_matches: list[tuple[str, int, str]] = []

    def pairs(groups: dict[str, list[GameRecord]]) -> list[tuple[str, list[GameRecord]]]:
        """The two-player runs of each event name; the others go to ``not_matches``."""
        found = []
        for event in sorted(groups):
            for run in _year_runs(groups[event]):
                players = {g.white for g in run} | {g.black for g in run}
                if len(players) == 2:
                    found.append((event, run))
                else:
                    year = min(g.date.year or 0 for g in run)
                    not_matches.append(
                        (event, year, f"{len(players)} players: a tournament or knock-out")
                    )
        return found

    folder_runs = pairs(in_folder)
    name_runs = pairs(by_name)
    fragments: list[TitleMatch] = []
    if folder_runs:
        for event, run in name_runs:
            home = next((r for e, r in folder_runs if e == event and _same_match(r, run)), None)
            if home is not None:
                held = {_same_game_key(g) for g in home}
                home.extend(g for g in run if _same_game_key(g) not in held)
                continue
            part = _match(event, run, forfeit_max_plies, "event name", games_folder)
            fragments.append(part)
            not_matches.append((event, part.year, _fragment_reason(part, folders)))
        counted = [(e, r, "folder") for e, r in folder_runs]
    else:
        counted = [(e, r, "event name") for e, r in name_runs]
    matches = [
        _match(event, _ordered(run), forfeit_max_plies, found_by, games_folder)
        for event, run, found_by in counted
    ]
    matches.sort(key=lambda m: (m.year, m.event))
    fragments.sort(key=lambda m: (m.year, m.event))
    not_matches.sort(key=lambda t: (t[1], t[0]))
    return TitleEvents(matches, not_matches, fragments)


def _same_match(folder_run: list[GameRecord], other: list[GameRecord]) -> bool:
    """Same pair of players, and years that overlap."""

    def pair(run: list[GameRecord]) -> set[str]:
        return {g.white for g in run} | {g.black for g in run}

    def years(run: list[GameRecord]) -> tuple[int, int]:
        ys = [g.date.year or 0 for g in run]
        return min(ys), max(ys)

    (a0, a1), (b0, b1) = years(folder_run), years(other)
    return pair(folder_run) == pair(other) and a0 <= b1 and b0 <= a1


def _same_game_key(game: GameRecord) -> tuple[object, ...]:
    """The same game in two files, even when the two copies' dates or rounds differ."""
    if game.moves:
        return (game.white, game.black, game.result, game.moves)
    return (game.white, game.black, game.result, game.date.sort_key, game.round)


def _fragment_reason(part: TitleMatch, folders: Sequence[str]) -> str:
    n = len(part.games)
    where = ", ".join(f"{f.rstrip('/')}/" for f in folders)
    return (
        f"the content holds {n} game{'s' if n != 1 else ''} of this match "
        f"({part.player_a} – {part.player_b}, in {', '.join(part.sources)}), found by its "
        f"event name outside the title folders ({where}): not counted as a match, as they "
        f"may not be the whole match"
    )


def _ordered(games: list[GameRecord]) -> list[GameRecord]:
    return sorted(games, key=lambda g: (g.date.sort_key, g.round, g.game_id))


def _year_runs(games: list[GameRecord]) -> list[list[GameRecord]]:
    """Split one event name's games where the years have a gap (a name reused later)."""
    runs: list[list[GameRecord]] = []
    for g in _ordered(games):
        if runs and (g.date.year or 0) - (runs[-1][-1].date.year or 0) <= 1:
            runs[-1].append(g)
        else:
            runs.append([g])
    return runs


def _match(
    event: str,
    games: list[GameRecord],
    forfeit_max_plies: int,
    found_by: str = "folder",
    games_folder: str = "",
) -> TitleMatch:
    points: dict[str, float] = defaultdict(float)
    scored = forfeits = draws = 0
    for g in games:
        s = g.score_white
        if s is None:
            continue
        if is_forfeit(g, forfeit_max_plies):
            forfeits += 1
            continue
        scored += 1
        draws += s == 0.5
        points[g.white] += s
        points[g.black] += 1 - s
    names = sorted({g.white for g in games} | {g.black for g in games})
    a, b = sorted(names, key=lambda n: (-points[n], n))
    years = [g.date.year or 0 for g in games]
    plain = tuple(
        MatchGame(g.game_id, g.white, g.black, g.white_elo, g.black_elo, g.date.months)
        for g in games
    )
    sources = tuple(sorted({_relative(g, games_folder) for g in games}))
    return TitleMatch(
        event,
        min(years),
        max(years),
        a,
        b,
        plain,
        scored,
        points[a],
        forfeits,
        found_by,
        sources,
        draws,
    )


def elo_expectation(elo_a: float, elo_b: float, cap: float = 400.0) -> float:
    """Expected score of A from the logistic Elo curve, with FIDE's 400-point cap.

    >>> round(elo_expectation(2785, 2660), 3)
    0.673
    """
    d = max(-cap, min(cap, elo_a - elo_b))
    return 1.0 / (1.0 + 10 ** (-d / 400.0))


def match_elo(match: TitleMatch, player: str) -> int | None:
    """The player's Elo tag on the match's first game that has one."""
    for g in match.games:
        elo = g.white_elo if g.white == player else g.black_elo
        if elo:
            return int(elo)
    return None


def noise_floor(games: int, share: float, draw_share: float) -> float:
    """E|S − p|: the mean absolute error of a perfect predictor over a match of ``games``.

    Each game is a win (1), a draw (½) or a loss (0) of A, independently, with probabilities
    ``w = p − d/2``, ``d``, ``l = 1 − p − d/2`` for the true score p and draw rate d; S is A's
    share over the match. The distribution of S is the ``games``-fold convolution of one
    game's. A predictor that knows p still errs by |S − p|; this is its expectation.

    >>> round(noise_floor(1, 0.5, 0.0), 3)  # one game, a coin: always ½ off
    0.5
    >>> round(noise_floor(2, 0.5, 1.0), 3)  # every game drawn: S = p exactly
    0.0
    """
    if games < 1:
        return math.nan
    d = min(max(draw_share, 0.0), 1.0)
    w = min(max(share - d / 2, 0.0), 1.0 - d)
    one = np.array([1.0 - w - d, d, w])  # half-points 0, 1, 2
    total = np.ones(1)
    for _ in range(games):
        total = np.convolve(total, one)
    s = np.arange(len(total)) / (2 * games)
    return float(np.sum(total * np.abs(s - (w + d / 2))))
