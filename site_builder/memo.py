"""What a build reuses from the last one: the memo API over the build cache.

Every value a family computes per player, game, group or aggregate is kept under a key made
by :func:`entry` from its kind and what it was computed from (the inputs' digests and the
settings), so a rebuild computes again only what a changed input reaches. ``Memo`` also
records what each family recomputed (shown by ``--explain`` and the tests).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum, unique
from typing import Any, TypeVar

import pandas as pd

from site_builder.model import GameRecord

T = TypeVar("T")


@unique
class Kind(StrEnum):
    """Every kind of entry in the build cache: the one list of its key namespaces."""

    #: a partition's result of one family's work function (``Partitions.map``)
    PARTITION = "partition"
    #: the partition results each output folder's last build used (the others are deleted)
    PARTITIONS_USED = "partitions-used"
    #: one family's per-game values (``Memo.per_game``)
    GAMES = "games"
    #: one group (player, year, event, ...) of a family, and the last build's groups at once
    GROUP = "group"
    GROUPS = "groups"
    #: a value over the whole corpus (``Memo.memoised``: calibrations, fits)
    AGGREGATE = "aggregate"
    #: a family's result, and the key it was made with
    FAMILY = "family"
    FAMILY_KEY = "family-key"
    #: a sequential Elo run of one time class under one set of rules
    ELO_RUN = "elo-run"
    #: the lists as they stood on an edition's date
    EDITION = "edition"
    #: the update's snapshot of the lists, and the history of updates
    UPDATE_SNAPSHOT = "update-snapshot"
    UPDATE_HISTORY = "update-history"
    #: a rendered part of a page (a game's move table, a family's player block)
    FRAGMENT = "fragment"
    #: the key of the fragment last made for a slot (a family's block of one player, a part
    #: of one game's page): the fragment it replaces is deleted
    FRAGMENT_SLOT = "fragment-slot"
    #: what an output folder's last build was made from (read at the start of a build)
    MANIFEST = "manifest"
    #: the digests of the pages it wrote and its page sets' keys (read by the render only)
    RENDERED = "rendered"
    #: a game's analysed plies, and its move rows
    PLIES = "plies"
    ROWS = "rows"
    #: the files a render pickled its site into for new workers, until it removes them
    RENDER_PICKLES = "render-pickles"


def entry(kind: Kind, *parts: str) -> str:
    """The key of one memo entry: its kind and the parts that name it, joined by "|". Every
    key of the build cache is made here."""
    return "|".join((kind.value, *parts))


@dataclass
class Memo:
    """The build cache as the families use it, and the keys of this build's inputs."""

    #: The build cache (get/set/transact), None outside a build
    store: Any = None
    #: Digest of the package's code (entries of an older code are not reused)
    code: str = ""
    #: player → digest of their games, analysis and the as-of date
    player_keys: dict[str, str] = field(default_factory=dict)
    #: game_id → digest of the game and its analysis (what its move rows depend on)
    game_keys: dict[str, str] = field(default_factory=dict)
    #: game_id → digest of the game's record as its moves depend on it
    fingerprints: dict[str, str] = field(default_factory=dict)
    #: family → the players it recomputed in this build
    recomputed_players: dict[str, set[str]] = field(default_factory=dict)
    #: family → how many groups (players, years, events, ...) it computed and reused
    group_counts: dict[str, dict[str, int]] = field(default_factory=dict)
    #: family → the last build's groups, as read from the store (see :meth:`memo_groups`)
    _group_batches: dict[str, dict[str, tuple[str, Any]]] = field(
        default_factory=dict, init=False, repr=False
    )

    def per_game(
        self,
        family: str,
        settings_key: str,
        games: Sequence[GameRecord],
        compute: Callable[[GameRecord], T],
    ) -> dict[str, T]:
        """``compute(game)`` of every game, reused from the last build where the game (its
        key) and ``settings_key`` are unchanged; the memo is read and written as one entry."""
        keys = {g.game_id: f"{self.game_keys.get(g.game_id, '')}|{settings_key}" for g in games}
        by_id = {g.game_id: g for g in games}
        return self._batched(
            entry(Kind.GAMES, family),
            keys,
            lambda missing: {gid: compute(by_id[gid]) for gid in missing},
        )

    def _batched(
        self, slot: str, keys: dict[str, str], compute: Callable[[list[str]], dict[str, T]]
    ) -> dict[str, T]:
        """A value per id, reused from the last build's entry ``slot`` where the id's key is
        unchanged; ``compute(missing ids)`` makes the rest. This build's values are written
        back as one entry (one read and one write, not one per id). In ``keys`` order."""
        memo_on = self.active
        last: dict[str, tuple[str, Any]] = (self.store.get(slot) if memo_on else None) or {}
        out: dict[str, T] = {}
        for i, key in keys.items():
            found = last.get(i)
            if found is not None and found[0] == key:
                out[i] = found[1]
        missing = [i for i in keys if i not in out]
        if missing:
            out.update(compute(missing))
        if memo_on and {i: k for i, (k, _) in last.items()} != keys:
            self.store.set(slot, {i: (k, out[i]) for i, k in keys.items()})
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
            if self.active:
                with self.store.transact():
                    for gid in missing:
                        self.store.set(entry(Kind.GROUP, family, gid, digests[gid]), (fresh[gid],))
            name = family.split("-", 1)[0]
            for gid in missing:
                if players and gid in players:
                    self.recomputed_players.setdefault(name, set()).add(players[gid])
            found.update(fresh)
        last = {gid: d for gid, (d, _) in self._group_batch(family).items()}
        if self.active and last != digests:
            # This build's groups in one entry: the next build reads them with one get.
            self.store.set(
                entry(Kind.GROUPS, family), {gid: (digests[gid], found[gid]) for gid in digests}
            )
        return found

    @property
    def active(self) -> bool:
        return self.store is not None and bool(self.game_keys)

    def forget_last_groups(self) -> None:
        """Drop the last build's groups read so far: a family reads only its own kinds, so
        they are garbage once it is computed."""
        self._group_batches.clear()

    def _group_batch(self, family: str) -> dict[str, tuple[str, Any]]:
        """The last build's groups of ``family``: ``{group id: (digest, value)}`` (read once)."""
        if family not in self._group_batches:
            batch = self.store.get(entry(Kind.GROUPS, family)) if self.active else None
            self._group_batches[family] = batch or {}
        return self._group_batches[family]

    def _group_hits(self, family: str, digests: dict[str, str]) -> dict[str, Any]:
        """The memoised values of the groups whose digest is unchanged: from the last build's
        batch, else from the entry of each group (kept for builds that alternate)."""
        found: dict[str, Any] = {}
        if not self.active:
            return found
        batch = self._group_batch(family)
        for gid, d in digests.items():
            last = batch.get(gid)
            if last is not None and last[0] == d:
                found[gid] = last[1]
            else:
                hit = self.store.get(entry(Kind.GROUP, family, gid, d))
                if hit is not None:
                    found[gid] = hit[0]
        return found

    def memoised(self, key: str, compute: Callable[[], T]) -> T:
        """``compute()``, reused from the last build under the same ``key``."""
        if self.store is not None and self.game_keys:
            hit = self.store.get(entry(Kind.AGGREGATE, key))
            if hit is not None:
                return hit[0]  # type: ignore[no-any-return]
        value = compute()
        if self.store is not None and self.game_keys:
            self.store.set(entry(Kind.AGGREGATE, key), (value,))
        return value
