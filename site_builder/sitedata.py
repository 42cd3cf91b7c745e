"""What every metric family and page builder receives: the built inputs of one site."""

from __future__ import annotations

import contextlib
import dataclasses
import fnmatch
import functools
import hashlib
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, Self, TypeVar

import numpy as np
import pandas as pd

from site_builder.analysis.positions import Ply
from site_builder.analysis.spec import AnalysisSpec
from site_builder.config import Settings
from site_builder.metrics.elo_fill import PlayerElo
from site_builder.model import GameRecord, PgnDate, Problem
from site_builder.render.writer import Page, PageSet

T = TypeVar("T")


class TurnArrays(Protocol):
    """Turns as padded arrays (metrics.intrinsic.Spreads, metrics.bayesian.Candidates):
    fields matrix, valid, played, in that order."""

    @property
    def valid(self) -> np.ndarray[Any, Any]: ...

    def __len__(self) -> int: ...

    def take(self, index: Any) -> Self: ...


A = TypeVar("A", bound=TurnArrays)


@dataclass
class SiteData:
    settings: Settings
    games: list[GameRecord]
    problems: list[Problem]
    as_of: PgnDate
    spec: AnalysisSpec | None
    #: game_id → plies (every move, engine or not)
    plies: dict[str, list[Ply]]
    #: One row per analysed move (see metrics.moves.COLUMNS).
    moves: pd.DataFrame
    #: game_ids whose moves were analysed
    analysed: set[str]
    #: game_id → why it was not analysed ("" when analysed)
    not_analysed: dict[str, str]
    player_slugs: dict[str, str]
    #: event key (see :func:`event_key`) → slug
    event_slugs: dict[str, str] = field(default_factory=dict)
    #: Results of each metric family, by family name.
    results: dict[str, Any] = field(default_factory=dict)
    #: Build facts shown on the methodology and report pages.
    facts: dict[str, Any] = field(default_factory=dict)
    #: (game_id, player) → the player's Elo in the game, missing tags filled
    #: (metrics.elo_fill; performance ratings only).
    elos: dict[tuple[str, str], PlayerElo] = field(default_factory=dict)
    #: Per-player memo: a store with get/set (the build cache), each player's input key
    #: (their games, analysis and the as-of date), and what each family recomputed.
    memo: Any = None
    #: Digest of the package's code (memo entries of an older code are not reused)
    code: str = ""
    player_keys: dict[str, str] = field(default_factory=dict)
    #: game_id → digest of the game and its analysis (what its move rows depend on)
    game_keys: dict[str, str] = field(default_factory=dict)
    #: game_id → digest of the game's record as its moves depend on it (build.game_fingerprint)
    fingerprints: dict[str, str] = field(default_factory=dict)
    #: game_id → the game's common table row (render.core_pages), made once per build
    game_rows: dict[str, dict[str, Any]] = field(default_factory=dict, repr=False)
    #: game_id → that row as page keys hold it (render.writer.Digested)
    game_row_keys: dict[str, Any] = field(default_factory=dict, repr=False)
    #: Digest of the templates, set by the render phase ("" outside a build)
    templates: str = ""
    #: The build's Jinja environment (set by the render phase; page parts are rendered with it)
    jinja: Any = field(default=None, repr=False)
    #: Page fragments rendered in this build, for the build cache (see core_pages._fragment)
    new_fragments: dict[str, Any] = field(default_factory=dict, repr=False)
    recomputed_players: dict[str, set[str]] = field(default_factory=dict)
    #: family → how many groups (players, years, events, ...) it computed and reused
    group_counts: dict[str, dict[str, int]] = field(default_factory=dict)
    #: family → the last build's groups, as read from the memo (see :meth:`memo_groups`)
    _group_batches: dict[str, dict[str, tuple[str, Any]]] = field(
        default_factory=dict, init=False, repr=False
    )

    def per_player(
        self, family: str, player: str, settings_key: str, compute: Callable[[], T]
    ) -> T:
        """``compute()`` for one player, reused from the last build when the player's inputs
        (games, their analysis, the as-of date) and ``settings_key`` are unchanged."""
        key = f"player|{family}|{player}|{self.player_keys.get(player, '')}|{settings_key}"
        if self.memo is not None and player in self.player_keys:
            found = self.memo.get(key)
            if found is not None:
                return found[0]  # type: ignore[no-any-return]
        value = compute()
        self.recomputed_players.setdefault(family, set()).add(player)
        if self.memo is not None and player in self.player_keys:
            self.memo.set(key, (value,))
        return value

    def per_players(
        self, family: str, settings_key: str, computes: Mapping[str, Callable[[], T]]
    ) -> dict[str, T]:
        """:meth:`per_player` for many players (``{player: compute}``), the last build's values
        read and this build's written as one memo entry."""

        def compute(missing: list[str]) -> dict[str, T]:
            # One commit for all the players' entries, not one per player.
            with self.memo.transact() if self.memo is not None else contextlib.nullcontext():
                return {p: self.per_player(family, p, settings_key, computes[p]) for p in missing}

        keys = {
            p: f"{self.player_keys[p]}|{settings_key}" for p in computes if p in self.player_keys
        }
        out = self._batched(f"players|{family}", keys, compute)
        unkeyed = [p for p in computes if p not in out]
        if unkeyed:
            out.update(compute(unkeyed))
        return {p: out[p] for p in computes}

    def per_game(
        self, family: str, settings_key: str, compute: Callable[[GameRecord], T]
    ) -> dict[str, T]:
        """``compute(game)`` of every game, reused from the last build where the game (its
        key) and ``settings_key`` are unchanged; the memo is read and written as one entry."""
        keys = {
            g.game_id: f"{self.game_keys.get(g.game_id, '')}|{settings_key}" for g in self.games
        }
        by_id = self.games_by_id
        return self._batched(
            f"games|{family}", keys, lambda missing: {gid: compute(by_id[gid]) for gid in missing}
        )

    def per_game_rows(
        self,
        slot: str,
        settings_key: str,
        moves: pd.DataFrame,
        compute: Callable[[pd.DataFrame], pd.DataFrame],
        order: list[str],
    ) -> pd.DataFrame:
        """``compute(moves)`` where each output row belongs to one game (column game_id) and
        depends on that game's moves only, sorted by ``order`` (unique per row). The rows of
        games whose key and ``settings_key`` are unchanged come from the last build; only
        the other games' moves are computed."""
        if not self._memo_on or moves.empty:
            return compute(moves)
        entry = f"game-rows|{slot}"
        keys, last, fresh = self._changed_games(entry, settings_key, moves)
        if last is None:
            out = compute(moves)
        else:
            old = last[1]
            if fresh is None:
                return old  # type: ignore[no-any-return]
            parts = [old[old["game_id"].isin([gid for gid in keys if gid not in fresh])]]
            if fresh:
                parts.append(compute(moves[moves["game_id"].isin(fresh)]))
            parts = [p for p in parts if len(p)] or parts[:1]
            out = (
                pd.concat(parts, ignore_index=True)
                .sort_values(order, kind="stable")
                .reset_index(drop=True)
            )
        self.memo.set(entry, (keys, out))
        return out

    def per_game_turns(
        self,
        slot: str,
        settings_key: str,
        moves: pd.DataFrame,
        compute: Callable[[pd.DataFrame], tuple[A, pd.DataFrame]],
        pad: float,
    ) -> tuple[A, pd.DataFrame]:
        """:meth:`per_game_rows` for turn tables: ``compute(moves)`` gives padded arrays (a
        matrix, its ``valid`` mask with the real entries first, ``played``; a row per turn)
        and the turns' rows (column game_id), in move-table order. The turns of games whose
        key is unchanged come from the last build; the matrix is as wide as its widest turn
        (padded with ``pad``), as a full pass makes it."""
        if not self._memo_on or moves.empty:
            return compute(moves)
        entry = f"game-turns|{slot}"
        keys, last, fresh = self._changed_games(entry, settings_key, moves)
        arrays: A
        if last is None:
            arrays, meta = compute(moves)
        else:
            _, old_arrays, old_meta = last
            if fresh is None:
                return old_arrays, old_meta
            keep = old_meta["game_id"].isin([g for g in keys if g not in fresh]).to_numpy()
            parts = [(old_arrays.take(keep), old_meta[keep])]
            if fresh:
                parts.append(compute(moves[moves["game_id"].isin(fresh)]))
            parts = [(a, m) for a, m in parts if len(m)]
            if not parts:
                arrays, meta = compute(moves)
            else:
                meta = pd.concat([m for _, m in parts], ignore_index=True)
                game = pd.Categorical(meta["game_id"], categories=sorted(keys)).codes
                order = np.argsort(game, kind="stable")
                meta = meta.take(order).reset_index(drop=True)
                arrays = _stack_turns([a for a, _ in parts], pad).take(order)
        self.memo.set(entry, (keys, arrays, meta))
        return arrays, meta

    def _changed_games(
        self, entry: str, settings_key: str, moves: pd.DataFrame
    ) -> tuple[dict[str, str], Any, set[str] | None]:
        """The key of each game in ``moves``, the memo ``entry`` (the last build's keys
        first, then its value) and the games whose key is new or changed: None when the
        entry holds exactly these games with these keys."""
        keys = {
            gid: f"{self.game_keys.get(gid, '')}|{settings_key}"
            for gid in pd.unique(moves["game_id"]).tolist()
        }
        last = self.memo.get(entry)
        if last is None:
            return keys, None, set(keys)
        old_keys = last[0]
        fresh = {gid for gid, k in keys.items() if old_keys.get(gid) != k}
        return keys, last, None if not fresh and len(old_keys) == len(keys) else fresh

    def _batched(
        self, slot: str, keys: dict[str, str], compute: Callable[[list[str]], dict[str, T]]
    ) -> dict[str, T]:
        """A value per id, reused from the last build's entry ``slot`` where the id's key is
        unchanged; ``compute(missing ids)`` makes the rest. This build's values are written
        back as one entry (one read and one write, not one per id). In ``keys`` order."""
        memo_on = self._memo_on
        last: dict[str, tuple[str, Any]] = (self.memo.get(slot) if memo_on else None) or {}
        out: dict[str, T] = {}
        for i, key in keys.items():
            found = last.get(i)
            if found is not None and found[0] == key:
                out[i] = found[1]
        missing = [i for i in keys if i not in out]
        if missing:
            out.update(compute(missing))
        if memo_on and {i: k for i, (k, _) in last.items()} != keys:
            self.memo.set(slot, {i: (k, out[i]) for i, k in keys.items()})
        return {i: out[i] for i in keys}

    def games_digest(self, game_ids: Iterable[str]) -> str:
        """Digest of a set of games and their analysis (empty without a memo)."""
        h = hashlib.md5()
        if isinstance(game_ids, pd.Series):
            game_ids = game_ids.unique().tolist()  # not one Python step per row
        for gid in sorted(set(game_ids)):
            h.update(f"{gid}={self.game_keys.get(gid, '')};".encode())
        return h.hexdigest()

    def units_digests(
        self, units: pd.DataFrame, groups: Mapping[str, Iterable[int]], settings_key: str
    ) -> dict[str, str]:
        """Digest of each group of units (a player's turns in a game), given as ``{group id:
        row positions}``: which units, their games and analysis, and the settings the
        group's value depends on."""
        game_ids = units["game_id"].astype(str).tolist()
        players = units["player"].astype(str).tolist()
        return {
            gid: f"{self.games_digest(game_ids[i] for i in rows)}|"
            f"{self.games_digest(players[i] for i in rows)}|{settings_key}"
            for gid, rows in groups.items()
        }

    def memo_groups(
        self,
        family: str,
        digests: dict[str, str],
        compute: Callable[[list[str]], dict[str, T]],
        players: dict[str, str] | None = None,
    ) -> dict[str, T]:
        """The value of every group (``{group id: digest of its inputs}``), reused from the
        last build where the digest is unchanged; ``compute(missing ids)`` computes the rest
        in one batch. ``family`` is "name" or "name-kind" (e.g. "intrinsic-year"); ``players``
        names the player of player groups, recorded as recomputed under "name"."""
        found = self._group_hits(family, digests)
        missing = sorted(set(digests) - set(found))
        counts = self.group_counts.setdefault(family, {"computed": 0, "reused": 0})
        counts["computed"] += len(missing)
        counts["reused"] += len(found)
        if missing:
            fresh = compute(missing)
            if self._memo_on:
                with self.memo.transact():
                    for gid in missing:
                        self.memo.set(f"group|{family}|{gid}|{digests[gid]}", (fresh[gid],))
            name = family.split("-", 1)[0]
            for gid in missing:
                if players and gid in players:
                    self.recomputed_players.setdefault(name, set()).add(players[gid])
            found.update(fresh)
        last = {gid: d for gid, (d, _) in self._group_batch(family).items()}
        if self._memo_on and last != digests:
            # This build's groups in one entry: the next build reads them with one get.
            self.memo.set(f"groups|{family}", {gid: (digests[gid], found[gid]) for gid in digests})
        return found

    def missing_groups(self, family: str, digests: dict[str, str]) -> list[str]:
        """The groups :meth:`memo_groups` would compute (to batch work across families)."""
        return sorted(set(digests) - set(self._group_hits(family, digests)))

    @property
    def _memo_on(self) -> bool:
        return self.memo is not None and bool(self.game_keys)

    def _group_batch(self, family: str) -> dict[str, tuple[str, Any]]:
        """The last build's groups of ``family``: ``{group id: (digest, value)}`` (read once)."""
        if family not in self._group_batches:
            batch = self.memo.get(f"groups|{family}") if self._memo_on else None
            self._group_batches[family] = batch or {}
        return self._group_batches[family]

    def _group_hits(self, family: str, digests: dict[str, str]) -> dict[str, Any]:
        """The memoised values of the groups whose digest is unchanged: from the last build's
        batch, else from the entry of each group (kept for builds that alternate)."""
        found: dict[str, Any] = {}
        if not self._memo_on:
            return found
        batch = self._group_batch(family)
        for gid, d in digests.items():
            last = batch.get(gid)
            if last is not None and last[0] == d:
                found[gid] = last[1]
            else:
                hit = self.memo.get(f"group|{family}|{gid}|{d}")
                if hit is not None:
                    found[gid] = hit[0]
        return found

    def memoised(self, key: str, compute: Callable[[], T]) -> T:
        """``compute()``, reused from the last build under the same ``key``."""
        if self.memo is not None and self.game_keys:
            hit = self.memo.get(f"aggregate|{key}")
            if hit is not None:
                return hit[0]  # type: ignore[no-any-return]
        value = compute()
        if self.memo is not None and self.game_keys:
            self.memo.set(f"aggregate|{key}", (value,))
        return value

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
    def classical_moves(self) -> pd.DataFrame:
        """The move-table rows of classical games (selected once for every family)."""
        if self.moves.empty:
            return self.moves
        return self.moves[self.moves["time_class"] == "classical"]

    @functools.cached_property
    def games_by_id(self) -> dict[str, GameRecord]:
        return {g.game_id: g for g in self.games}

    @functools.cached_property
    def _move_positions(self) -> dict[str, Any]:
        """game_id → positions of its rows in the move table (grouped once)."""
        if self.moves.empty:
            return {}
        return {str(k): v for k, v in self.moves.groupby("game_id", sort=False).indices.items()}

    def move_rows_of(
        self, game_id: str, columns: Sequence[str] | None = None
    ) -> list[dict[str, Any]]:
        """The move-table rows of one game as dicts (only ``columns`` when given), in ply
        order."""
        at = self._move_positions.get(game_id)
        if at is None:
            return []
        if columns is None:
            rows: list[dict[str, Any]] = self.moves.iloc[at].to_dict("records")
            return rows
        values = [self._move_column(c)[at].tolist() for c in columns]
        return [dict(zip(columns, row, strict=True)) for row in zip(*values, strict=True)]

    def _move_column(self, name: str) -> Any:
        """One column of the move table as an array (made once)."""
        found = self._move_arrays.get(name)
        if found is None:
            found = self._move_arrays[name] = self.moves[name].to_numpy()
        return found

    @functools.cached_property
    def _move_arrays(self) -> dict[str, Any]:
        return {}

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
    """An event is its name and year ("World Championship 13th 1927")."""
    name = game.event or "(no event name)"
    return f"{name} {game.date.year}" if game.date.year else name


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
    player_sections: Callable[[SiteData, str], list[Section]] | None = None
    #: What ``player_sections`` reads of the family's results for one player, gathered
    #: cheaply: the player's pages are made again only when it (or another input) changes.
    #: None: the sections themselves are part of the key.
    player_inputs: Callable[[SiteData, str], Any] | None = None
    #: The player's own downloads (the small tables of the player page), made with the
    #: player's pages, so only when the player's key changed: their rows must be among
    #: ``player_inputs``.
    player_files: Callable[[SiteData, str], list[Page]] | None = None
    #: Keep the rendered ``player_sections`` in the build cache (keyed by ``player_inputs``);
    #: False for blocks that almost every new game changes.
    cache_player_blocks: bool = True
    game_sections: Callable[[SiteData, GameRecord], list[Section]] | None = None
    #: What ``game_sections`` reads for one game, gathered cheaply (as ``player_inputs``).
    game_inputs: Callable[[SiteData, GameRecord], Any] | None = None
    #: Blocks on an event (tournament or match) page, given the event key.
    event_sections: Callable[[SiteData, str], list[Section]] | None = None
    #: An event's own downloads, made with the event page (as ``player_files``): their rows
    #: must be among what ``event_sections`` returns.
    event_files: Callable[[SiteData, str], list[Page]] | None = None
    #: Paragraphs for the methodology page (template partial name), or None.
    methodology: str | None = None
    #: Reads no other family's results (checked): on a machine with more than one core it is
    #: computed in a worker process while the build's process computes the families listed
    #: before it. The families marked so must be listed together.
    in_worker: bool = False
    #: The family's ratings of one player, for the summary card atop the player page.
    player_summary: Callable[[SiteData, str], list[SummaryItem]] | None = None
    #: Per-player columns of an event's performance table, given the event key.
    event_performance: Callable[[SiteData, str], list[EventColumn]] | None = None


def _stack_turns(parts: list[A], pad: float) -> A:
    """Padded turn arrays one below the other, as wide as the widest turn."""
    width = max(int(p.valid.sum(axis=1).max()) for p in parts)
    names = [f.name for f in dataclasses.fields(parts[0])]  # type: ignore[arg-type]
    columns: list[list[np.ndarray[Any, Any]]] = [[] for _ in names]
    for p in parts:
        for k, name in enumerate(names):
            a = getattr(p, name)
            if a.ndim == 2:  # the matrix (padded with ``pad``) and per-column arrays (with 0)
                extra = width - a.shape[1]
                if extra > 0:
                    fill = pad if k == 0 else 0
                    a = np.pad(a, ((0, 0), (0, extra)), constant_values=fill)
                a = a[:, :width]
            columns[k].append(a)
    return type(parts[0])(*(np.concatenate(c) for c in columns))
