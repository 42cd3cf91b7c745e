"""The partitioned move store: rows written and read back unchanged, partitions by player."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pandas as pd

from site_builder.analysis.positions import position_hash
from site_builder.store import MoveStore, partition_of, to_arrow, to_frame


def test_rows_round_trip_through_arrow(small_site) -> None:  # type: ignore[no-untyped-def]
    moves = small_site.moves
    assert len(moves) > 1000
    back = to_frame(to_arrow(moves))
    pd.testing.assert_frame_equal(back, moves)
    assert type(back["line_scores"].iloc[0]) is list  # as the move table has them


def _by_player(moves: pd.DataFrame, folder: Path, n: int = 7) -> tuple[MoveStore, pd.Series]:
    """``moves`` written as a store of ``n`` partitions by player, and each row's partition."""
    store = MoveStore(folder, n)
    part = moves["player"].map(lambda p: partition_of(p, n))
    for p, rows in moves.groupby(part, sort=True):
        store.write(int(p), f"{int(p):024x}", rows)
    store.commit(sorted(int(p) for p in part.unique()))
    return store, part


def test_a_partition_holds_whole_players_in_table_order(small_site, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    moves = small_site.moves
    store, part = _by_player(moves, tmp_path / "moves")
    stranger = tmp_path / "moves" / "notes.txt"
    stranger.write_text("mine")
    for p in store.parts():
        got = store.read(p)
        want = moves[part == p].reset_index(drop=True)
        pd.testing.assert_frame_equal(got, want)
        assert set(got["player"].map(lambda n: partition_of(n, 7))) == {p}
    classical = store.read(store.parts()[0], ["game_id", "player"], time_class="classical")
    assert list(classical.columns) == ["game_id", "player"]
    # A reopened store knows its partitions; a new key replaces only the store's own file.
    again = MoveStore(tmp_path / "moves", 7)
    assert again.parts() == store.parts()
    first = again.parts()[0]
    again.write(first, "f" * 24, again.read(first))
    again.commit(again.parts())
    names = sorted(f.name for f in (tmp_path / "moves").iterdir())
    assert "notes.txt" in names and stranger.read_text() == "mine"
    assert sum(n.startswith(f"p{first:05d}-") for n in names) == 1


def test_the_build_facts_come_from_the_partitions_footers(small_site, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """The moves, negative errors and mean nodes of the build facts equal those counted over
    every move row, read from each partition file's own counts; a file written without
    them (an older version) is read instead."""
    import pyarrow.parquet as pq

    from site_builder.analysis.stage import store_facts

    moves = small_site.moves
    store, part = _by_player(moves, tmp_path / "moves")
    want = {
        "moves": len(moves),
        "negative_deltas": int((moves["raw_delta"] < 0).sum()),
        "mean_nodes": moves["nodes"].sum() / len(moves),
    }
    assert want["negative_deltas"] > 0 and want["mean_nodes"] > 0
    assert store_facts(store) == want
    distinct = sorted({position_hash(p) for p in moves["position"]})
    assert 0 < len(distinct) < len(moves)  # positions repeat (openings)
    assert store.position_hashes().tolist() == distinct
    assert list(store.read(store.parts()[0]).columns) == list(moves.columns)
    # Without the footer's counts and the hash column (as an older version wrote the file):
    # the same facts and positions.
    first = store.parts()[0]
    path = store.path(first, store.keys[first])
    table = pq.read_table(path)
    pq.write_table(table.drop_columns(["position_hash"]).replace_schema_metadata({}), path)
    assert store.facts(first) == {
        "moves": int((part == first).sum()),
        "negative_deltas": int((moves[part == first]["raw_delta"] < 0).sum()),
        "nodes": int(moves[part == first]["nodes"].sum()),
    }
    assert store_facts(store) == want
    assert store.position_hashes().tolist() == distinct


def _moves_per_player(rows: pd.DataFrame, scale: int) -> dict[str, int]:
    """A partition's work: each mover's analysed moves, times ``scale``."""
    return {str(p): int(n) * scale for p, n in rows.groupby("player").size().items()}


def _partitions(small_site, tmp_path: Path, workers: int, memo=None):  # type: ignore[no-untyped-def]
    from site_builder.analysis.stage import write_store
    from site_builder.memo import Memo
    from site_builder.partitions import Partitions

    store = MoveStore(tmp_path / "moves", 5)
    keys = {gid: gid for gid in small_site.moves["game_id"].unique()}
    write_store(store, small_site.moves, keys)
    return Partitions(store, Memo(store=memo, code="c"), workers)


def test_work_over_partitions_is_the_same_in_workers_and_reused(small_site, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    from site_builder.incremental import BuildCache

    want = {str(p): int(n) * 2 for p, n in small_site.moves.groupby("player").size().items()}
    one = _partitions(small_site, tmp_path / "one", 1)
    got = one.map(_moves_per_player, 2, columns=["player"])
    assert len(got) == len(one.parts()) == 5
    assert {k: v for part in got for k, v in part.items()} == want
    with BuildCache(tmp_path / "memo") as memo:
        two = _partitions(small_site, tmp_path / "two", 2, memo)
        assert two.map(_moves_per_player, 2, columns=["player"]) == got
        assert two.computed == {f"{__name__}._moves_per_player": 5}
        again = two.map(_moves_per_player, 2, columns=["player"])
        assert again == got and two.computed[f"{__name__}._moves_per_player"] == 5  # reused
        two.map(_moves_per_player, 3, columns=["player"])  # other arguments: computed
        assert two.computed[f"{__name__}._moves_per_player"] == 10


def test_an_argument_per_partition_is_each_partitions_own_and_its_key(
    small_site, tmp_path: Path
) -> None:  # type: ignore[no-untyped-def]
    """A :class:`PerPartition` argument gives each partition its own value, in workers as in
    one process; a partition is computed again only when its own value changes."""
    from site_builder.incremental import BuildCache
    from site_builder.partitions import PerPartition

    name = f"{__name__}._moves_per_player"
    with BuildCache(tmp_path / "memo") as memo:
        parts = _partitions(small_site, tmp_path / "p", 2, memo)
        ids = parts.parts()
        scales = {p: 10 + p for p in ids}
        got = parts.map(_moves_per_player, PerPartition(scales), columns=["player"])
        for p, found in zip(ids, got, strict=True):
            rows = parts.read(p, ["player"])
            assert found == _moves_per_player(rows, scales[p])
        assert parts.computed[name] == len(ids) == 5
        again = parts.map(
            _moves_per_player, PerPartition({**scales, ids[0]: 1}), columns=["player"]
        )
        assert again[1:] == got[1:] and again[0] != got[0]
        assert parts.computed[name] == 6  # the other four reused
        few = parts.map(
            _moves_per_player, PerPartition({ids[2]: 3}), columns=["player"], only={ids[2]}
        )
        assert few == [_moves_per_player(parts.read(ids[2], ["player"]), 3)]


def _rows_by_game(moves: pd.DataFrame, backwards: bool = False) -> dict[str, list[dict]]:
    """Each game's move rows as the analysis stage makes them (plain values, None for no
    Elo), in table order or ``backwards``."""
    records = moves.to_dict("records")
    for r in records:
        for k in ("player_elo", "opponent_elo", "year"):
            r[k] = None if pd.isna(r[k]) else int(r[k])
    by_game: dict[str, list[dict]] = {}
    for r in reversed(records) if backwards else records:
        by_game.setdefault(r["game_id"], []).append(r)
    return by_game


def test_the_partition_writer_spills_and_keeps_the_partitions(small_site, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    from site_builder.store import PartitionWriter

    moves = small_site.moves
    by_game = _rows_by_game(moves, backwards=True)  # out of order: the writer sorts them
    store = MoveStore(tmp_path / "moves", 6)
    writer = PartitionWriter(store, budget=500, batch=120)  # columns every 120 rows
    for rows in by_game.values():
        writer.add(rows)
    work = writer._work
    assert work.is_dir() and any(work.iterdir())  # it spilled
    parts = sorted(writer.parts())
    writer.finish({p: f"{p:024x}" for p in parts})
    store.commit(parts)
    assert not work.exists()
    part = moves["player"].map(lambda p: partition_of(p, 6))
    for p in parts:
        pd.testing.assert_frame_equal(store.read(p), moves[part == p].reset_index(drop=True))


def test_rows_handed_as_arrow_tables_make_the_same_partitions(small_site, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """The analysis stage's workers send a share of games' rows as one Arrow table
    (:meth:`PartitionWriter.add_table`): the partitions are those of the same rows handed as
    dicts, with some games kept from the current file, and the writer spilling."""
    import pyarrow as pa

    from site_builder.store import SCHEMA, PartitionWriter

    moves = small_site.moves
    by_game = _rows_by_game(moves, backwards=True)
    games = list(by_game)
    n = 5
    kept = {p: set(games[p::7]) for p in range(n)}  # rows the writer must leave out

    def written(folder: Path, tables: bool) -> MoveStore:
        store = MoveStore(folder, n)
        writer = PartitionWriter(store, budget=700, batch=150)
        for p, ids in kept.items():
            writer.keep(p, ids)
        for start in range(0, len(games), 9):  # nine games a share, as a worker sends them
            share = [r for gid in games[start : start + 9] for r in by_game[gid]]
            if tables:
                writer.add_table(pa.Table.from_pylist(share, schema=SCHEMA))
            else:
                for gid in games[start : start + 9]:
                    writer.add(by_game[gid])
        assert writer._work.is_dir()  # it spilled
        # No current file to take the kept games from: leave them out of the comparison.
        writer._kept.clear()
        parts = sorted(writer.parts())
        writer.finish({p: f"{p:024x}" for p in parts})
        store.commit(parts)
        return store

    as_dicts = written(tmp_path / "dicts", tables=False)
    as_tables = written(tmp_path / "tables", tables=True)
    assert as_dicts.parts() == as_tables.parts() and len(as_dicts.parts()) == n
    part = moves["player"].map(lambda p: partition_of(p, n))
    for p in as_dicts.parts():
        got = as_tables.read(p)
        pd.testing.assert_frame_equal(got, as_dicts.read(p))
        want = moves[(part == p) & ~moves["game_id"].isin(kept[p])].reset_index(drop=True)
        pd.testing.assert_frame_equal(got, want)


def test_an_object_shared_by_arguments_keeps_the_key(small_site, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    from site_builder.incremental import BuildCache

    with BuildCache(tmp_path / "memo") as memo:
        parts = _partitions(small_site, tmp_path / "p", 1, memo)
        name = "".join(["sh", "ared"])  # one string object
        parts.map(_moves_per_player_named, (name,), {"label": name}, columns=["player"])
        computed = dict(parts.computed)
        # The same values, the second argument a copy (as if read back from the build cache).
        parts.map(_moves_per_player_named, (name,), {"label": "shared"}, columns=["player"])
        assert parts.computed == computed  # reused


def _moves_per_player_named(rows: pd.DataFrame, names: tuple[str], label: dict[str, str]) -> int:
    return len(rows) + len(names) + len(label)


def _moves_beside(rows: pd.DataFrame, scale: int, *, side: Path) -> int:
    from site_builder.partitions import write_side

    counts = rows.groupby("player").size().sort_index().to_numpy(dtype=np.int64)
    write_side(side, {"counts": counts * scale})
    return len(counts)


def test_side_output_is_reused_while_its_folder_is_there(small_site, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """A partition's side output: its rows read back as written, from workers or from one
    process; the value reused only while its folder is there; a change of arguments deletes
    the old folders, and nothing else in the side folder."""
    from site_builder.incremental import BuildCache
    from site_builder.partitions import SIDE

    name = f"{__name__}._moves_beside"
    with BuildCache(tmp_path / "memo") as memo:
        one = _partitions(small_site, tmp_path / "one", 1, memo)
        first = one.map_beside(_moves_beside, 2, columns=["player"])
        assert len(first) == 5 and one.computed[name] == 5
        for players, folder in first:
            counts = np.load(folder / "counts.npy", mmap_mode="r")
            assert len(counts) == players and counts.dtype == np.int64
            assert (counts > 0).all() and (counts % 2 == 0).all()
        two = _partitions(small_site, tmp_path / "two", 2, memo)
        assert [v for v, _ in two.map_beside(_moves_beside, 2, columns=["player"])] == [
            v for v, _ in first
        ]
        root = first[0][1].parent
        assert root.parent.name == SIDE
        mine = root / "unrelated.txt"
        mine.write_text("not the build's")
        theirs = root / "notes"
        theirs.mkdir()
        # Named as the build names its folders, but holding a file it does not write.
        named = root / f"p00000-{'ab' * 12}"
        named.mkdir()
        (named / "keep.txt").write_text("mine")
        again = one.map_beside(_moves_beside, 2, columns=["player"])
        assert again == first and one.computed[name] == 5  # reused
        shutil.rmtree(first[0][1])  # a folder gone: that partition is computed again
        again = one.map_beside(_moves_beside, 2, columns=["player"])
        assert again == first and one.computed[name] == 6
        damaged = first[1][1] / "counts.npy"  # a file cut short: computed and written again
        whole = damaged.read_bytes()
        damaged.write_bytes(whole[:-8])
        again = one.map_beside(_moves_beside, 2, columns=["player"])
        assert again == first and one.computed[name] == 7 and damaged.read_bytes() == whole
        other = one.map_beside(_moves_beside, 3, columns=["player"])
        assert one.computed[name] == 12
        assert sorted(p.name for p in root.iterdir()) == sorted(
            [mine.name, theirs.name, named.name, *(folder.name for _, folder in other)]
        )
        assert mine.read_text() == "not the build's" and theirs.is_dir()
        assert (named / "keep.txt").read_text() == "mine"


def test_rewritten_partition_keeps_unchanged_rows_from_file(small_site, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """After a tournament, a changed partition takes its unchanged games' rows from its
    current file (its footer names each game's row key) and only the others from ``add``:
    the file equals one written from every row."""
    from site_builder.store import PartitionWriter

    moves = small_site.moves
    by_game = _rows_by_game(moves)
    games = sorted(by_game)
    n = 3
    part_of = moves["player"].map(lambda p: partition_of(p, n))

    def members(ids: list[str]) -> dict[int, dict[str, str]]:
        out: dict[int, dict[str, str]] = {}
        for gid in ids:
            for r in by_game[gid]:
                out.setdefault(partition_of(r["player"], n), {})[gid] = f"rows-{gid}"
        return out

    store = MoveStore(tmp_path / "moves", n)
    first, later = games[:-2], games[-2:]
    writer = PartitionWriter(store)
    for gid in first:
        writer.add(by_game[gid])
    old = members(first)
    written = writer.finish({p: f"{p:024x}" for p in old}, old)
    store.commit(sorted(written))
    assert store.members(0) == old[0]

    # Two games more; one game's rows changed (a new row key): it is read again.
    new = members(games)
    changed_game = first[0]
    writer = PartitionWriter(store)
    for p, ids in new.items():
        writer.keep(p, {g for g in ids if store.members(p).get(g) == ids[g] and g != changed_game})
    for gid in [changed_game, *later]:
        writer.add(by_game[gid])
    keys = {p: f"{p + 10:024x}" for p in new}
    written = writer.finish(keys, new)
    store.commit(sorted(written))
    assert written == set(new)
    for p in sorted(new):
        pd.testing.assert_frame_equal(store.read(p), moves[part_of == p].reset_index(drop=True))
        assert store.members(p) == new[p]


def _moves_after(rows: pd.DataFrame, scale: int, *, side: Path, earlier: Path | None) -> str:
    """The folder it was offered from an earlier build (its name), after its own output."""
    _moves_beside(rows, scale, side=side)
    return earlier.name if earlier is not None else ""


def test_a_work_is_offered_its_earlier_folder(small_site, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """map_beside(earlier=True): a partition computed again is offered the whole folder its
    work left for the same partition number before (never one being written or damaged),
    which is deleted once the new one is written."""
    from site_builder.incremental import BuildCache

    with BuildCache(tmp_path / "memo") as memo:
        one = _partitions(small_site, tmp_path / "one", 1, memo)
        first = one.map_beside(_moves_after, 2, columns=["player"], earlier=True)
        assert [v for v, _ in first] == [""] * 5
        # A folder being written by another process, named as the build names them.
        writing = first[0][1].with_name(f"p00000-{'cd' * 12}.tmp-123")
        writing.mkdir()
        damaged = first[1][1] / "counts.npy"
        damaged.write_bytes(damaged.read_bytes()[:-8])
        second = one.map_beside(_moves_after, 3, columns=["player"], earlier=True)
        names = [f.name for _, f in first]
        assert [v for v, _ in second] == [names[0], "", *names[2:]]
        assert not any(f.is_dir() for _, f in first)
        assert all(f.is_dir() for _, f in second)
