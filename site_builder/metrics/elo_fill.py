"""Missing Elo tags filled from the same player's other games (pure).

A game whose player has no Elo tag takes the tag of the same player's nearest game of the
same time class in the same event; when the event has none, their nearest game of the same
time class within ``months`` months. Ties go to the earlier game, then the smaller game id.
Only performance ratings use the filled values; every figure counts the tags it filled.
"""

from __future__ import annotations

import bisect
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from site_builder.model import GameRecord, PgnDate, refusing_other_layouts


@refusing_other_layouts
@dataclass(frozen=True, order=True, slots=True)
class PlayerElo:
    """A player's Elo in one game: the game's own tag, or one filled from another game."""

    elo: int
    #: The game whose tag was used ("" when the game's own tag).
    source: str = ""

    @property
    def filled(self) -> bool:
        return self.source != ""


def date_position(date: PgnDate) -> float | None:
    """Months since year 0 with the day as a fraction (mid-month when unknown); None undated."""
    months = date.months
    if months is None:
        return None
    if date.month is not None and date.day is not None:
        return months + (date.day - 1) / 31.0
    return months + 0.5 if date.month is not None else months


@dataclass(frozen=True)
class _Tagged:
    position: float | None
    game_id: str
    event: str
    time_class: str
    elo: int


def _nearest(candidates: Sequence[_Tagged], at: float | None) -> _Tagged | None:
    """The candidate nearest to ``at`` (undated: distance 0), then earlier, then by game id."""
    if not candidates:
        return None

    def key(t: _Tagged) -> tuple[float, float, str]:
        distance = 0.0 if at is None or t.position is None else abs(t.position - at)
        return (distance, t.position if t.position is not None else 0.0, t.game_id)

    return min(candidates, key=key)


def fill_elos(
    games: Sequence[GameRecord], months: int, event_of: Callable[[GameRecord], str]
) -> dict[tuple[str, str], PlayerElo]:
    """(game_id, player) → the player's Elo in that game, tagged or filled; absent when
    neither the game nor any eligible game of the player carries a tag."""
    tagged: dict[str, list[_Tagged]] = defaultdict(list)
    missing: list[tuple[str, GameRecord]] = []
    out: dict[tuple[str, str], PlayerElo] = {}
    for g in games:
        for player, elo in ((g.white, g.white_elo), (g.black, g.black_elo)):
            if elo is None:
                missing.append((player, g))
                continue
            out[(g.game_id, player)] = PlayerElo(elo)
            tagged[player].append(
                _Tagged(date_position(g.date), g.game_id, event_of(g), g.time_class, elo)
            )
    by_event: dict[tuple[str, str, str], list[_Tagged]] = defaultdict(list)
    # Dated tags per (player, time class), sorted by date, for the window search.
    by_class: dict[tuple[str, str], list[_Tagged]] = defaultdict(list)
    for player, tags in tagged.items():
        for t in tags:
            by_event[(player, t.event, t.time_class)].append(t)
            if t.position is not None:
                by_class[(player, t.time_class)].append(t)
    for lst in by_class.values():
        lst.sort(key=lambda t: (t.position or 0.0, t.game_id))
    positions = {k: [t.position or 0.0 for t in v] for k, v in by_class.items()}
    for player, g in missing:
        at = date_position(g.date)
        found = _nearest(by_event.get((player, event_of(g), g.time_class), []), at)
        if found is None and at is not None and months > 0:
            lst = by_class.get((player, g.time_class), [])
            pos = positions.get((player, g.time_class), [])
            lo = bisect.bisect_left(pos, at - months)
            hi = bisect.bisect_right(pos, at + months)
            found = _nearest(lst[lo:hi], at)
        if found is not None:
            out[(g.game_id, player)] = PlayerElo(found.elo, found.game_id)
    return out
