"""What a build reuses from the last one: the memo API over the build cache.

Every value a family computes per player, game, group or aggregate is kept under a key made
by :func:`entry` from its kind and what it was computed from (the inputs' digests and the
settings), so a rebuild computes again only what a changed input reaches. ``Memo`` also
records what each family recomputed (shown by ``--explain`` and the tests).
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, Self, TypeVar

import numpy as np
import pandas as pd

from site_builder.model import GameRecord

T = TypeVar("T")


def entry(kind: str, *parts: str) -> str:
    """The key of one memo entry: its kind ("player", "group", "fragment", ...) and the
    parts that name it, joined by "|". Every key of the build cache is made here."""
    return "|".join((kind, *parts))


class TurnArrays(Protocol):
    """Turns as padded arrays (metrics.intrinsic.Spreads, metrics.bayesian.Candidates):
    fields matrix, valid, played, in that order."""

    @property
    def valid(self) -> np.ndarray[Any, Any]: ...

    def __len__(self) -> int: ...

    def take(self, index: Any) -> Self: ...


A = TypeVar("A", bound=TurnArrays)


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

    def per_player(
        self, family: str, player: str, settings_key: str, compute: Callable[[], T]
    ) -> T:
        """``compute()`` for one player, reused from the last build when the player's inputs
        (games, their analysis, the as-of date) and ``settings_key`` are unchanged."""
        key = entry("player", family, player, self.player_keys.get(player, ""), settings_key)
        if self.store is not None and player in self.player_keys:
            found = self.store.get(key)
            if found is not None:
                return found[0]  # type: ignore[no-any-return]
        value = compute()
        self.recomputed_players.setdefault(family, set()).add(player)
        if self.store is not None and player in self.player_keys:
            self.store.set(key, (value,))
        return value

    def per_players(
        self, family: str, settings_key: str, computes: Mapping[str, Callable[[], T]]
    ) -> dict[str, T]:
        """:meth:`per_player` for many players (``{player: compute}``), the last build's values
        read and this build's written as one memo entry."""

        def compute(missing: list[str]) -> dict[str, T]:
            # One commit for all the players' entries, not one per player.
            with self.store.transact() if self.store is not None else contextlib.nullcontext():
                return {p: self.per_player(family, p, settings_key, computes[p]) for p in missing}

        keys = {
            p: f"{self.player_keys[p]}|{settings_key}" for p in computes if p in self.player_keys
        }
        out = self._batched(entry("players", family), keys, compute)
        unkeyed = [p for p in computes if p not in out]
        if unkeyed:
            out.update(compute(unkeyed))
        return {p: out[p] for p in computes}

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
            entry("games", family),
            keys,
            lambda missing: {gid: compute(by_id[gid]) for gid in missing},
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
        if not self.active or moves.empty:
            return compute(moves)
        slot = entry("game-rows", slot)
        keys, last, fresh = self._changed_games(slot, settings_key, moves)
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
        self.store.set(slot, (keys, out))
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
        if not self.active or moves.empty:
            return compute(moves)
        slot = entry("game-turns", slot)
        keys, last, fresh = self._changed_games(slot, settings_key, moves)
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
        self.store.set(slot, (keys, arrays, meta))
        return arrays, meta

    def _changed_games(
        self, slot: str, settings_key: str, moves: pd.DataFrame
    ) -> tuple[dict[str, str], Any, set[str] | None]:
        """The key of each game in ``moves``, the memo entry ``slot`` (the last build's keys
        first, then its value) and the games whose key is new or changed: None when the
        entry holds exactly these games with these keys."""
        keys = {
            gid: f"{self.game_keys.get(gid, '')}|{settings_key}"
            for gid in pd.unique(moves["game_id"]).tolist()
        }
        last = self.store.get(slot)
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
                        self.store.set(entry("group", family, gid, digests[gid]), (fresh[gid],))
            name = family.split("-", 1)[0]
            for gid in missing:
                if players and gid in players:
                    self.recomputed_players.setdefault(name, set()).add(players[gid])
            found.update(fresh)
        last = {gid: d for gid, (d, _) in self._group_batch(family).items()}
        if self.active and last != digests:
            # This build's groups in one entry: the next build reads them with one get.
            self.store.set(
                entry("groups", family), {gid: (digests[gid], found[gid]) for gid in digests}
            )
        return found

    def missing_groups(self, family: str, digests: dict[str, str]) -> list[str]:
        """The groups :meth:`memo_groups` would compute (to batch work across families)."""
        return sorted(set(digests) - set(self._group_hits(family, digests)))

    @property
    def active(self) -> bool:
        return self.store is not None and bool(self.game_keys)

    def _group_batch(self, family: str) -> dict[str, tuple[str, Any]]:
        """The last build's groups of ``family``: ``{group id: (digest, value)}`` (read once)."""
        if family not in self._group_batches:
            batch = self.store.get(entry("groups", family)) if self.active else None
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
                hit = self.store.get(entry("group", family, gid, d))
                if hit is not None:
                    found[gid] = hit[0]
        return found

    def memoised(self, key: str, compute: Callable[[], T]) -> T:
        """``compute()``, reused from the last build under the same ``key``."""
        if self.store is not None and self.game_keys:
            hit = self.store.get(entry("aggregate", key))
            if hit is not None:
                return hit[0]  # type: ignore[no-any-return]
        value = compute()
        if self.store is not None and self.game_keys:
            self.store.set(entry("aggregate", key), (value,))
        return value


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
