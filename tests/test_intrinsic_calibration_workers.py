"""The intrinsic calibration's fits and unit table run as tasks in the build's worker
processes (issue 17): the same numbers, bit for bit, as in one process, whatever the chunks."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from threadpoolctl import threadpool_limits  # type: ignore[import-untyped]

from site_builder import forked
from site_builder.config import IntrinsicSection
from site_builder.metrics import intrinsic as I
from tests.test_intrinsic import TRUE_C, TRUE_ELO, _simulated_calibration_data
from tests.test_intrinsic_speed_identity import table_differences


@pytest.fixture(scope="module")
def turns(small_site):  # type: ignore[no-untyped-def]
    return _simulated_calibration_data(small_site.moves, per_bucket=900)


def test_unit_table_does_not_depend_on_its_chunks(turns) -> None:  # type: ignore[no-untyped-def]
    """Chunks of one turn, of a few units, cut inside a unit's turns or not, in worker
    processes or here: every array equal to the one-chunk table's, bit for bit."""
    sp, meta = turns
    cal = I.Calibration("percentile", 75, (), TRUE_C, TRUE_ELO, "")
    grid = I.elo_grid(cal, 2000, 3000, 50)
    whole = I.unit_table(sp, meta, cal, grid, chunk_turns=len(sp))
    assert len(whole.keys) > 100 and np.isfinite(whole.ups).all()
    for chunk in (1, 29, 31, 1000):
        assert table_differences(I.unit_table(sp, meta, cal, grid, chunk_turns=chunk), whole) == []
    with forked.worker_pool(2):
        assert forked.shared_pool() is not None
        pooled = I.unit_table(sp, meta, cal, grid, forked.pool_map, chunk_turns=500)
    assert table_differences(pooled, whole) == []
    with pytest.raises(ValueError, match="at least one turn"):
        I.unit_table(sp.take(np.arange(0)), meta.iloc[:0], cal, grid)


def test_calibration_in_worker_processes_is_the_one_of_one_process(turns) -> None:  # type: ignore[no-untyped-def]
    """Every free fit, every refit and the two lines, from the build's workers, equal those
    computed here one after another (one BLAS thread in both, as in a build)."""
    sp, meta = turns
    cfg = dataclasses.replace(
        IntrinsicSection(), milepost_min=2100, milepost_max=2600, min_turns=800
    )
    methods = ["percentile", "ml"]
    with threadpool_limits(limits=1, user_api="blas"):
        here = I.free_fits(sp, meta, cfg, methods)
        cal_here = I.calibrate(sp, meta, cfg, fits=here["percentile"])
        with forked.worker_pool(2):
            there = I.free_fits(sp, meta, cfg, methods, forked.pool_map)
            cal_there = I.calibrate(sp, meta, cfg, run=forked.pool_map)
    assert list(here) == methods
    assert list(here["ml"]) == list(range(2100, 2601, 100))
    assert here["ml"][2100] is None  # no turn at 2100
    assert sum(f is not None for f in here["ml"].values()) == 5
    assert here == there
    assert cal_here.usable, cal_here.status
    assert repr(cal_here) == repr(cal_there)  # a float's repr is exact; NaN ≠ NaN
    assert all(b.refit is not None for b in cal_there.buckets if b.fit is not None)
