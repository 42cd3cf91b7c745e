"""Scaling: throughput of 2 engine processes against 1 on a 2-core machine, beside the bare
engine's own scaling on the same positions, and a Dask LocalCluster with 2 workers against
the local pool.

Judged by: speedup = median time(1 engine) / median time(2 engines) over interleaved rounds
(a shared VM's speed drifts by several percent from minute to minute, so one pair of runs
is not enough). Target: at least 1.9x. The bare engine's figure (the same positions piped to
`stockfish` processes, no Python at all) is the ceiling the machine allows.
"""

from __future__ import annotations

import functools
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

from bench.common import STOCKFISH, demo_positions
from site_builder.analysis.engine import PositionTask
from site_builder.analysis.pool import LocalPool
from site_builder.analysis.positions import chunked
from site_builder.analysis.spec import AnalysisSpec, board_from_key
from site_builder.analysis.stage import identify_engine

DEPTH, MULTIPV, N, ROUNDS = 10, 10, 300, 3  # 12 chunks of 25 each round


@functools.cache
def _positions() -> list[str]:
    return [p for p, _ in demo_positions(N)]


def _tasks() -> list[list[PositionTask]]:
    return chunked([PositionTask(p, True, ()) for p in _positions()], 25)


def timed_local(spec: AnalysisSpec, workers: int) -> float:
    start = time.perf_counter()
    LocalPool(STOCKFISH, spec, workers).run(_tasks(), lambda r, n: None)
    return time.perf_counter() - start


def timed_bare(processes: int) -> float:
    """The positions split between ``processes`` bare engines fed from a file, as fast as
    the engine itself goes (``ucinewgame`` waits for the previous search to finish)."""
    head = (
        "uci\nsetoption name Threads value 1\nsetoption name Hash value 16\n"
        f"setoption name MultiPV value {MULTIPV}\nisready\n"
    )
    with tempfile.TemporaryDirectory() as tmp:
        files = []
        for k in range(processes):
            body = "".join(
                f"ucinewgame\nposition fen {board_from_key(p).fen()}\ngo depth {DEPTH}\n"
                for p in _positions()[k::processes]
            )
            path = Path(tmp) / f"engine{k}.txt"
            path.write_text(head + body + "ucinewgame\n", encoding="utf-8")
            files.append(path)
        start = time.perf_counter()
        procs = [
            subprocess.Popen([STOCKFISH], stdin=f.open("rb"), stdout=subprocess.DEVNULL)
            for f in files
        ]
        for proc in procs:
            proc.wait()
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


def _fmt(times: list[float]) -> str:
    return ", ".join(f"{t:.1f}" for t in times)


def main() -> dict[str, float]:
    spec = AnalysisSpec(identify_engine(STOCKFISH), DEPTH, 0, MULTIPV, 16, 1)
    runs: dict[str, list[float]] = {"1": [], "2": [], "bare 1": [], "bare 2": []}
    for _ in range(ROUNDS):  # interleaved, so drift hits all alike
        runs["1"].append(timed_local(spec, 1))
        runs["2"].append(timed_local(spec, 2))
        runs["bare 1"].append(timed_bare(1))
        runs["bare 2"].append(timed_bare(2))
    med = {k: statistics.median(v) for k, v in runs.items()}
    dask = timed_dask(spec)
    print(f"scaling: {N} positions at depth {DEPTH}, multi-PV {MULTIPV}, {ROUNDS} rounds")
    for key, label in (
        ("1", "site-builder, 1 engine"),
        ("2", "site-builder, 2 engines"),
        ("bare 1", "bare stockfish, 1 process"),
        ("bare 2", "bare stockfish, 2 processes"),
    ):
        print(f"  {label}: {med[key]:.1f} s median ({N / med[key]:.1f} pos/s); {_fmt(runs[key])}")
    print(f"  Dask LocalCluster, 2 workers: {dask:.1f} s ({N / dask:.1f} pos/s)")
    speedup, bare = med["1"] / med["2"], med["bare 1"] / med["bare 2"]
    verdict = "meets" if speedup >= 1.9 else "misses"
    print(f"  bare engine's own scaling on this machine: {bare:.2f}x (the ceiling)")
    print(f"RATIO 2 engines against 1: {speedup:.2f}x ({verdict} the 1.9x target)")
    print(f"RATIO site-builder's scaling against the bare engine's: {speedup / bare:.2f}")
    print(f"RATIO Dask (2 workers) against the local pool (2 engines): {med['2'] / dask:.2f}x")
    return {"one": med["1"], "two": med["2"], "dask": dask, "speedup": speedup, "bare": bare}


if __name__ == "__main__":
    main()
