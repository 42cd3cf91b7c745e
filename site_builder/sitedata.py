"""What every metric family and page builder receives: the built inputs of one site."""

from __future__ import annotations

import fnmatch
import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

import pandas as pd

from site_builder.analysis.spec import AnalysisSpec
from site_builder.config import Settings
from site_builder.memo import Memo
from site_builder.metrics.elo_fill import PlayerElo
from site_builder.metrics.moves import move_table
from site_builder.model import GameRecord, PgnDate, Problem, event_title
from site_builder.partitions import Partitions
from site_builder.render.writer import Page, PageSet
from site_builder.store import GameStore

T = TypeVar("T")


@dataclass
class BuildState:
    """What one build adds to the inputs as it goes: the families' results, the facts shown
    on the methodology and report pages, and the render's working state."""

    #: Results of each metric family, by family name.
    results: dict[str, Any] = field(default_factory=dict)
    #: Build facts shown on the methodology and report pages.
    facts: dict[str, Any] = field(default_factory=dict)
    #: Digest of the templates, set by the render phase ("" outside a build)
    templates: str = ""
    #: The build's Jinja environment (set by the render phase; page parts are rendered with it)
    jinja: Any = field(default=None, repr=False)
    #: Page fragments rendered in this build, for the build cache (see core_pages._fragment):
    #: key → (the key of its slot's record, the fragment)
    new_fragments: dict[str, tuple[str, Any]] = field(default_factory=dict, repr=False)
    #: game_id → the digest of its common table row (render.core_pages), as page keys hold it
    game_row_keys: dict[str, Any] = field(default_factory=dict, repr=False)


@dataclass(frozen=True)
class SiteData:
    """The inputs of one site (games, their analysis, settings), the state of the build
    that makes it (:attr:`state`) and what it reuses from the last build (:attr:`cache`)."""

    settings: Settings
    games: list[GameRecord]
    problems: list[Problem]
    as_of: PgnDate
    spec: AnalysisSpec | None
    #: Each game's plies and move rows, read one game at a time (None without a build cache)
    game_store: GameStore | None
    #: game_ids whose moves were analysed
    analysed: set[str]
    #: game_id → why it was not analysed ("" when analysed)
    not_analysed: dict[str, str]
    player_slugs: dict[str, str]
    #: event key (see :func:`event_key`) → slug
    event_slugs: dict[str, str] = field(default_factory=dict)
    #: (game_id, player) → the player's Elo in the game, missing tags filled
    #: (metrics.elo_fill; performance ratings only).
    elos: dict[tuple[str, str], PlayerElo] = field(default_factory=dict)
    state: BuildState = field(default_factory=BuildState)
    cache: Memo = field(default_factory=Memo)
    #: The move table on disk, by partitions of players, and where per-partition work runs
    #: (None for a site made without a build cache).
    partitions: Partitions | None = None

    @functools.cached_property
    def calibration_game_ids(self) -> set[str]:
        """Games of the Elo calibration: ``[intrinsic] calibration_games`` (all when empty)."""
        patterns = self.settings.intrinsic.calibration_games
        if not patterns:
            return {g.game_id for g in self.games}
        prefix = self.settings.content.games.rstrip("/") + "/"
        out = set()
        for g in self.games:
            rel = g.source[len(prefix) :] if g.source.startswith(prefix) else g.source
            if any(fnmatch.fnmatch(rel, pat) for pat in patterns):
                out.add(g.game_id)
        return out

    @functools.cached_property
    def settings_digest(self) -> str:
        """Digest of every settings section (taken once)."""
        return self.settings.digest()

    @functools.cached_property
    def moves(self) -> pd.DataFrame:
        """The whole move table (see metrics.moves.COLUMNS), read from the store: for small
        sites, tests and tools. The families read it a partition at a time
        (:attr:`partitions`), so a build never holds it whole."""
        if self.partitions is None:
            return move_table([])
        return self.partitions.store.table()

    @functools.cached_property
    def games_by_id(self) -> dict[str, GameRecord]:
        return {g.game_id: g for g in self.games}

    def player_path(self, name: str) -> str:
        return f"players/{self.player_slugs[name]}.html"

    @staticmethod
    def game_path(game_id: str) -> str:
        return f"games/{game_id}.html"

    def event_path(self, key: str) -> str:
        return f"events/{self.event_slugs[key]}.html"

    def games_of_event(self) -> dict[str, list[GameRecord]]:
        out: dict[str, list[GameRecord]] = {}
        for g in self.games:
            out.setdefault(event_key(g), []).append(g)
        return out

    @property
    def as_of_months(self) -> float | None:
        return self.as_of.months


def event_key(game: GameRecord) -> str:
    """An event is its name and year ("World Championship 13th 1927", "13th Norway Chess
    2025")."""
    return event_title(game.event or "(no event name)", game.date.year)


@dataclass(frozen=True)
class Section:
    """A block on a player or game page, drawn by a partial template."""

    title: str
    template: str
    context: dict[str, Any]


@dataclass(frozen=True)
class NavItem:
    title: str
    path: str
    #: A menu of pages under this entry (then ``path`` is the first child's path).
    children: tuple[NavItem, ...] = ()


@dataclass(frozen=True)
class SummaryItem:
    """One rating on a player's summary card ("Quality index 63.6, 95% 58.1–69.1, #4 of 16").

    ``value`` None means n/a, and ``note`` says why. ``low``/``high`` bound the interval the
    method gives (``interval`` names it); both None when the method gives none. ``rank`` and
    ``of`` place the player in the list ``href`` points to (relative to the site root).
    """

    label: str
    value: float | None
    digits: int = 0
    unit: str = ""
    low: float | None = None
    high: float | None = None
    interval: str = ""
    rank: int | None = None
    of: int | None = None
    href: str = ""
    note: str = ""

    def __post_init__(self) -> None:
        # The list's size is shown only beside a rank; without one it is not part of the card
        # (so a player without a rank keeps the same page when the list grows).
        if self.rank is None:
            object.__setattr__(self, "of", None)


@dataclass(frozen=True)
class EventColumn:
    """A column of an event's performance table: one value per player (None: n/a).

    ``low``/``high`` give an interval per player when the method has one; ``key`` names the
    column in the CSV/JSON downloads and ``legend`` documents it.
    """

    key: str
    label: str
    values: dict[str, float | None]
    legend: str
    digits: int = 0
    low: dict[str, float | None] = field(default_factory=dict)
    high: dict[str, float | None] = field(default_factory=dict)
    #: player → why the value is n/a
    notes: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Family:
    """A metric family: its computation, its pages and its blocks on shared pages."""

    name: str
    compute: Callable[[SiteData], Any]
    pages: Callable[[SiteData], Sequence[Page | PageSet]]
    nav: tuple[NavItem, ...] = ()
    #: What the family's blocks on a player page read, gathered cheaply (see
    #: ``render/views.py``): the player's pages are made again only when it (or another
    #: input of the page) changes. None: no block for this player.
    player_view: Callable[[SiteData, str], Any] | None = None
    #: The family's blocks on the player page, made from the view alone.
    player_sections: Callable[[Any], list[Section]] | None = None
    #: The player's own downloads (the small tables of the player page), made from the view
    #: with the player's pages, so only when the player's key changed.
    player_files: Callable[[Any], list[Page]] | None = None
    #: Keep the rendered ``player_sections`` in the build cache (keyed by the view);
    #: False for blocks that almost every new game changes.
    cache_player_blocks: bool = True
    #: What the family's blocks on a game page read (as ``player_view``).
    game_view: Callable[[SiteData, GameRecord], Any] | None = None
    #: The family's blocks on a game page, made from the game's view alone.
    game_sections: Callable[[Any], list[Section]] | None = None
    #: Blocks on an event (tournament or match) page, given the event key.
    event_sections: Callable[[SiteData, str], list[Section]] | None = None
    #: An event's own downloads, made with the event page (as ``player_files``): their rows
    #: must be among what ``event_sections`` returns.
    event_files: Callable[[SiteData, str], list[Page]] | None = None
    #: Paragraphs for the methodology page (template partial name), or None.
    methodology: str | None = None
    #: The family's ratings of one player, for the summary card atop the player page.
    player_summary: Callable[[SiteData, str], list[SummaryItem]] | None = None
    #: Per-player columns of an event's performance table, given the event key.
    event_performance: Callable[[SiteData, str], list[EventColumn]] | None = None
    #: ``pages()`` returns the family's few pages, made as one item by the render process
    #: that writes them (not by the build before its workers fork, which would then each
    #: hold them); False: it returns the render's items itself (the core family's page sets).
    pages_as_one_item: bool = True
    #: What the family tells the core pages (the methodology page, the build report), put
    #: in ``state.facts`` before any page is made.
    facts: Callable[[SiteData], dict[str, Any]] | None = None
