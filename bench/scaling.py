"""Scaling: throughput of 2 engine processes against 1 on a 2-core machine, and a Dask
LocalCluster with 2 workers against the local pool.

Judged by: speedup = time(1 engine) / time(2 engines). Target: at least 1.9x.
"""

from __future__ import annotations

import time

from bench.common import STOCKFISH, demo_positions
from site_builder.analysis.engine import PositionTask
from site_builder.analysis.pool import LocalPool
from site_builder.analysis.positions import chunked
from site_builder.analysis.spec import AnalysisSpec
from site_builder.build import identify_engine

DEPTH, MULTIPV, N = 10, 10, 600  # 24 chunks of 25: the last chunk's tail is small


def _tasks() -> list[list[PositionTask]]:
    return chunked([PositionTask(p, True, ()) for p, _ in demo_positions(N)], 25)


def timed_local(spec: AnalysisSpec, workers: int) -> float:
    start = time.perf_counter()
    LocalPool(STOCKFISH, spec, workers).run(_tasks(), lambda r, n: None)
    return time.perf_counter() - start


def timed_dask(spec: AnalysisSpec) -> float:
    from distributed import Client, LocalCluster

    from site_builder.analysis.dask_backend import DaskPool

    with (
        LocalCluster(
            n_workers=2,
            threads_per_worker=1,
            processes=True,
            host="127.0.0.1",
            dashboard_address=None,
        ) as cluster,
        Client(cluster) as client,
    ):
        client.wait_for_workers(2)
        start = time.perf_counter()
        DaskPool(client, STOCKFISH, spec).run(_tasks(), lambda r, n: None)
        return time.perf_counter() - start


def main() -> dict[str, float]:
    spec = AnalysisSpec(identify_engine(STOCKFISH), DEPTH, 0, MULTIPV, 16, 1)
    one = timed_local(spec, 1)
    two = timed_local(spec, 2)
    dask = timed_dask(spec)
    print(f"scaling: {N} positions at depth {DEPTH}, multi-PV {MULTIPV}")
    print(f"  1 engine: {one:.1f} s ({N / one:.1f} pos/s)")
    print(f"  2 engines: {two:.1f} s ({N / two:.1f} pos/s)")
    print(f"  Dask LocalCluster, 2 workers: {dask:.1f} s ({N / dask:.1f} pos/s)")
    speedup = one / two
    verdict = "meets" if speedup >= 1.9 else "misses"
    print(f"RATIO 2 engines against 1: {speedup:.2f}x ({verdict} the 1.9x target)")
    print(f"RATIO Dask (2 workers) against the local pool (2 engines): {two / dask:.2f}x")
    return {"one": one, "two": two, "dask": dask, "speedup": speedup}


if __name__ == "__main__":
    main()
