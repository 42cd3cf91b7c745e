"""The conformance family over the move store's partitions: the same result from one
partition, from many, and from worker processes; a partition's work is reused."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

from tests.conftest import local_cluster, requires_engine


def _partitions(site: Any, directory: Path, count: int, workers: int, memo: Any = None) -> Any:
    from site_builder.analysis.stage import write_store
    from site_builder.memo import Memo
    from site_builder.partitions import Partitions
    from site_builder.store import MoveStore

    store = MoveStore(directory, count)
    write_store(store, site.moves, {gid: gid for gid in site.moves["game_id"].unique()})
    return Partitions(store, Memo(store=memo, code="c"), workers)


def _same(a: Any, b: Any) -> None:
    for kind in a.counts:
        for name in ("counts", "q", "r_cum"):
            pd.testing.assert_frame_equal(
                getattr(a, name)[kind], getattr(b, name)[kind], check_exact=True
            )
    assert [c.key for c in a.curves] == [c.key for c in b.curves]
    for x, y in zip(a.curves, b.curves, strict=True):
        for field in ("rho", "alpha", "beta"):
            np.testing.assert_array_equal(getattr(x, field), getattr(y, field))
        assert x.games == y.games
    assert a.fit == b.fit and a.fit_status == b.fit_status
    assert a.ponderation == b.ponderation
    pd.testing.assert_frame_equal(a.models.years, b.models.years, check_exact=True)
    for name in ("white", "black", "white_rows", "black_rows", "white_exits", "black_exits"):
        mine, theirs = getattr(a.models, name), getattr(b.models, name)
        assert list(mine) == list(theirs)
        for key in mine:
            np.testing.assert_array_equal(mine[key], theirs[key])
    np.testing.assert_array_equal(a.models.all_white, b.models.all_white)
    np.testing.assert_array_equal(a.models.all_black, b.models.all_black)
    assert a.h2h.keys == b.h2h.keys
    for name in ("markov", "gain", "conformance", "win", "loss"):
        np.testing.assert_array_equal(getattr(a.h2h, name), getattr(b.h2h, name))
    pd.testing.assert_frame_equal(a.best, b.best, check_exact=True)
    pd.testing.assert_frame_equal(a.complexity, b.complexity, check_exact=True)
    pd.testing.assert_frame_equal(a.strength, b.strength, check_exact=True)
    assert a.wcc == b.wcc


@requires_engine
def test_partitions_give_the_result_of_one(small_site: Any, tmp_path: Path) -> None:
    from site_builder.families import conformance
    from site_builder.incremental import BuildCache

    site = dataclasses.replace(small_site, partitions=_partitions(small_site, tmp_path / "1", 1, 1))
    one = conformance.compute(site)
    # The complexity groups pool moves of several partitions; the game predictor pools both
    # sides of a game, who are in different partitions.
    assert {"All", "Title-match players", "Others"} <= set(one.complexity["player"])
    assert one.curves[0].games >= 180 and one.ponderation is not None
    with BuildCache(tmp_path / "memo") as memo:
        site = dataclasses.replace(site, partitions=_partitions(site, tmp_path / "7", 7, 2, memo))
        assert len(site.partitions.parts()) == 7
        many = conformance.compute(site)
        _same(one, many)
        name = f"{conformance.__name__}.partition_share"
        assert site.partitions.computed == {name: 7}
        again = conformance.compute(site)  # every partition's work reused
        assert site.partitions.computed == {name: 7}
        _same(one, again)
        # Another setting of [conformance] is new work for every partition.
        other = dataclasses.replace(one.cfg, k1=1.0)
        site.partitions.map(conformance.partition_share, other, columns=conformance.MOVE_COLUMNS)
        assert site.partitions.computed == {name: 14}


@requires_engine
@pytest.mark.slow
def test_partitions_on_a_dask_cluster_give_the_same_result(small_site: Any, tmp_path: Path) -> None:
    pytest.importorskip("distributed")
    from distributed import Client

    from site_builder.families import conformance

    site = dataclasses.replace(small_site, partitions=_partitions(small_site, tmp_path / "1", 1, 1))
    one = conformance.compute(site)
    cluster = _partitions(small_site, tmp_path / "5", 5, 1)
    with local_cluster() as lc, Client(lc) as client:
        cluster.client = client  # the workers read the store's folder
        _same(one, conformance.compute(dataclasses.replace(small_site, partitions=cluster)))
    assert cluster.computed == {f"{conformance.__name__}.partition_share": 5}


def test_the_pool_takes_each_column_out_of_the_partitions() -> None:
    # The pooled moves are the build's only copy: each partition's columns are taken out as
    # they are pooled, and the pool is in move-table order (game, ply) across partitions.
    from site_builder.families import conformance
    from site_builder.metrics import headtohead

    def share(games: list[str], game: list[int], ply: list[int], raw: list[float]) -> Any:
        n = len(game)
        moves = {name: np.zeros(n) for name in conformance.POOLED}
        moves["raw"] = np.array(raw)
        moves["bins"] = np.zeros((n, 3), dtype=np.int8)
        return conformance.PartitionShare(
            counts={},
            players=headtohead.PlayerYears(pd.DataFrame(), np.zeros(1), np.zeros(1)),
            complexity=[],
            games=np.array(games, dtype=object),
            movers=np.array(["A"], dtype=object),
            game=np.array(game, dtype=np.int32),
            mover=np.zeros(n, dtype=np.int32),
            ply=np.array(ply, dtype=np.int32),
            moves=moves,
        )

    parts = [
        share(["g1", "g2"], [1, 0, 0], [3, 1, 5], [2.0, 1.0, 3.0]),
        share(["g1"], [0], [2], [4.0]),
    ]
    pool = conformance._pool(parts)
    assert all(p.moves == {} for p in parts)
    assert list(pool.games) == ["g1", "g2"]
    # g1: plies 1 and 5 (first part), 2 (second); g2: ply 3
    assert pool.moves["raw"].tolist() == [1.0, 4.0, 3.0, 2.0]
    assert pool.game.tolist() == [0, 0, 0, 1]
    assert set(pool.moves) == set(conformance.POOLED)
