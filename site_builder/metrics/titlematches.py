"""World-championship title matches in the content, their actual scores and Elo expectations.

A game belongs to a title match when its file lies under one of the configured folders, or
when its event name matches one of the configured patterns and none of the exclusions. Games
are grouped by event name and pair of players; an event of that name with more than two
players is a tournament or a knock-out, not a match, and is reported as such.
"""

from __future__ import annotations

import math
import re
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field

from site_builder.model import GameRecord


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

    @property
    def key(self) -> str:
        return f"{self.event} {self.year}"

    @property
    def share_a(self) -> float:
        return self.score_a / self.scored if self.scored else math.nan

    @property
    def label(self) -> str:
        return f"{self.player_a} – {self.player_b} {self.year}"


@dataclass(frozen=True)
class TitleEvents:
    matches: list[TitleMatch]
    #: Events whose name marks a world championship but which are not two-player matches.
    not_matches: list[tuple[str, int, str]] = field(default_factory=list)


def is_title_game(
    game: GameRecord,
    games_folder: str,
    folders: Sequence[str],
    patterns: Sequence[re.Pattern[str]],
    exclude: Sequence[re.Pattern[str]],
) -> bool:
    prefix = games_folder.rstrip("/") + "/"
    rel = game.source[len(prefix) :] if game.source.startswith(prefix) else game.source
    if any(rel.startswith(f.rstrip("/") + "/") for f in folders):
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
    """Every title match in the content, in date order."""
    inc = [re.compile(p, re.IGNORECASE) for p in patterns]
    exc = [re.compile(p, re.IGNORECASE) for p in exclude]
    chosen = [
        g
        for g in games
        if g.date.year is not None and is_title_game(g, games_folder, folders, inc, exc)
    ]
    by_event: dict[str, list[GameRecord]] = defaultdict(list)
    for g in chosen:
        by_event[g.event or "(no event name)"].append(g)
    matches: list[TitleMatch] = []
    not_matches: list[tuple[str, int, str]] = []
    for event in sorted(by_event):
        for run in _year_runs(by_event[event]):
            players = {g.white for g in run} | {g.black for g in run}
            year = min(g.date.year or 0 for g in run)
            if len(players) != 2:
                not_matches.append(
                    (event, year, f"{len(players)} players: a tournament or knock-out")
                )
                continue
            matches.append(_match(event, run, forfeit_max_plies))
    matches.sort(key=lambda m: (m.year, m.event))
    not_matches.sort(key=lambda t: (t[1], t[0]))
    return TitleEvents(matches, not_matches)


def _year_runs(games: list[GameRecord]) -> list[list[GameRecord]]:
    """Split one event name's games where the years have a gap (a name reused later)."""
    ordered = sorted(games, key=lambda g: (g.date.sort_key, g.round, g.game_id))
    runs: list[list[GameRecord]] = []
    for g in ordered:
        if runs and (g.date.year or 0) - (runs[-1][-1].date.year or 0) <= 1:
            runs[-1].append(g)
        else:
            runs.append([g])
    return runs


def _match(event: str, games: list[GameRecord], forfeit_max_plies: int) -> TitleMatch:
    points: dict[str, float] = defaultdict(float)
    scored = forfeits = 0
    for g in games:
        s = g.score_white
        if s is None:
            continue
        if is_forfeit(g, forfeit_max_plies):
            forfeits += 1
            continue
        scored += 1
        points[g.white] += s
        points[g.black] += 1 - s
    names = sorted({g.white for g in games} | {g.black for g in games})
    a, b = sorted(names, key=lambda n: (-points[n], n))
    years = [g.date.year or 0 for g in games]
    plain = tuple(
        MatchGame(g.game_id, g.white, g.black, g.white_elo, g.black_elo, g.date.months)
        for g in games
    )
    return TitleMatch(event, min(years), max(years), a, b, plain, scored, points[a], forfeits)


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
