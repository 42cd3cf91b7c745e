"""Python overhead: the engine's own reported search time against wall time, one engine.

Judged by: overhead = 1 − engine time / wall time. Target: at most 3% at depth 14.
"""

from __future__ import annotations

import time

from bench.common import STOCKFISH, demo_positions
from site_builder.analysis.engine import PositionTask
from site_builder.analysis.pool import LocalPool
from site_builder.analysis.positions import chunked
from site_builder.analysis.spec import AnalysisSpec
from site_builder.analysis.stage import identify_engine

PROFILES = [(10, 1, 300), (10, 10, 100), (14, 1, 100), (14, 10, 25)]


def measure(depth: int, multipv: int, n: int, engine: str) -> dict[str, float]:
    spec = AnalysisSpec(engine, depth, 0, multipv, 16, 1)
    tasks = [PositionTask(p, True, ()) for p, _ in demo_positions(n)]
    pool = LocalPool(STOCKFISH, spec, 1)
    start = time.perf_counter()
    stats = pool.run(chunked(tasks, 50), lambda results, done: None)
    wall = time.perf_counter() - start
    return {
        "depth": depth,
        "multipv": multipv,
        "positions": n,
        "wall": wall,
        "engine": stats.engine_seconds,
        "per_position": wall / n,
        "overhead": 1 - stats.engine_seconds / wall,
    }


def main() -> list[dict[str, float]]:
    engine = identify_engine(STOCKFISH)
    rows = []
    print("overhead: engine-reported time against wall time, one engine process")
    print(
        f"{'depth':>5} {'multipv':>7} {'positions':>9} {'wall s':>8} {'engine s':>8} "
        f"{'ms/pos':>7} {'overhead':>8}"
    )
    for depth, multipv, n in PROFILES:
        r = measure(depth, multipv, n, engine)
        rows.append(r)
        print(
            f"{depth:>5} {multipv:>7} {n:>9} {r['wall']:>8.1f} {r['engine']:>8.1f} "
            f"{1000 * r['per_position']:>7.1f} {100 * r['overhead']:>7.1f}%"
        )
    worst14 = max(r["overhead"] for r in rows if r["depth"] == 14)
    verdict = "meets" if worst14 <= 0.03 else "misses"
    print(f"RATIO python overhead at depth 14: {100 * worst14:.1f}% ({verdict} the 3% target)")
    return rows


if __name__ == "__main__":
    main()
