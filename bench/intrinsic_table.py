"""Intrinsic ratings' unit tables (issue 17): `intrinsic.unit_table` now against the plain
numpy version it replaced (frozen in tests/test_intrinsic_speed_identity.py), on the demo's
real turns: the calibration's bucket table (its ~46,000 turns in milepost buckets) and every
partition's table (a partition's players' turns, padded to the widest turn), each for the 105
calibrated agents of the Elo grid, as the intrinsic family computes them.

The demo's shipped analysis is imported into a fresh cache (no engine search), the
calibration fitted as in a build; the tables' inputs are caught on their way into
`unit_table`. Every table is first checked to be bit-identical to the old code's (the bench
stops if not), then both are timed, interleaved, ``REPEATS`` times on one core.

Judged by: the ratio old / new of the median total seconds over all the tables (also given
for the calibration table and the partitions alone: small tables gain less, numpy's per-call
overhead dominates them).

Measured 2026-11-24 (AMD EPYC, 2 shared cores, Python 3.11.2, numpy 2.4.6), three runs: all
tables 1.39x, 1.42x, 1.39x (calibration table 1.44x, 1.49x, 1.52x; partitions 1.35x, 1.40x,
1.36x).
"""

from __future__ import annotations

import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.common import CONTENT, machine

REPEATS = 5


def demo_tables(cache: Path) -> list[tuple[str, tuple[Any, ...]]]:
    """(name, unit_table arguments) of the demo's calibration table and partition tables."""
    from site_builder.analysis.stage import prepare
    from site_builder.config import load_settings
    from site_builder.families import intrinsic as family
    from site_builder.metrics import intrinsic
    from site_builder.stats import BuildStats

    settings = load_settings(CONTENT)
    site = prepare(
        CONTENT, settings, BuildStats(), cache_dir=cache, progress=False, echo=lambda s: None
    )
    assert site is not None and site.partitions is not None
    cfg = settings.intrinsic
    caught: list[tuple[str, tuple[Any, ...]]] = []
    real = intrinsic.unit_table

    def catch(*args: Any) -> Any:
        caught.append(("calibration", args[:4]))  # sp, meta, cal, grid (not the runner)
        return real(*args)

    intrinsic.unit_table = catch  # type: ignore[assignment]
    try:
        result = family.compute_calibration(site)
    finally:
        intrinsic.unit_table = real  # type: ignore[assignment]
    cal = result.calibration
    assert cal is not None and cal.usable, "the demo's calibration is not usable"
    grid = intrinsic.elo_grid(cal, cfg.elo_grid_min, cfg.elo_grid_max, cfg.elo_grid_step)
    found = site.partitions.map(
        family.partition_turns, cfg, columns=family.TURN_READ, time_class="classical"
    )
    width = max(p.width for p in found)
    for part in site.partitions.parts():
        rows = site.partitions.read(part, family.TURN_READ, "classical")
        sp, meta = family._turns(rows, cfg)
        if len(sp):
            caught.append((f"partition {part}", (family._padded(sp, width), meta, cal, grid)))
    return caught


def main() -> dict[str, float]:
    from site_builder.metrics import intrinsic
    from tests.test_intrinsic_speed_identity import old_unit_table, table_differences

    print("Intrinsic unit tables: old (plain numpy) against new, demo turns")
    with tempfile.TemporaryDirectory(prefix="bench-intrinsic-") as tmp:
        clock = time.perf_counter()
        tables = demo_tables(Path(tmp))
        setup = time.perf_counter() - clock
    turns = [len(args[0]) for _, args in tables]
    grid = tables[0][1][3]
    print(
        f"  {len(tables)} tables ({turns[0]:,} calibration turns; {len(tables) - 1} partitions,"
        f" {sum(turns[1:]):,} turns, {min(turns[1:]):,}–{max(turns[1:]):,} each), "
        f"{len(grid)} agents; setup {setup:.0f} s"
    )
    for name, args in tables:
        bad = table_differences(intrinsic.unit_table(*args), old_unit_table(*args))
        if bad:
            raise SystemExit(f"{name}: the new table differs from the old in {bad}")
    print("  every table bit-identical to the old code's")
    old_s: dict[str, list[float]] = {"calibration": [], "partitions": []}
    new_s: dict[str, list[float]] = {"calibration": [], "partitions": []}
    for _ in range(REPEATS):
        for times, fn in ((old_s, old_unit_table), (new_s, intrinsic.unit_table)):
            spent = {"calibration": 0.0, "partitions": 0.0}
            for name, args in tables:
                clock = time.perf_counter()
                fn(*args)
                spent["calibration" if name == "calibration" else "partitions"] += (
                    time.perf_counter() - clock
                )
            for k, v in spent.items():
                times[k].append(v)
    out: dict[str, float] = {}
    for part in ("calibration", "partitions", "all"):
        if part == "all":
            old = [a + b for a, b in zip(old_s["calibration"], old_s["partitions"], strict=True)]
            new = [a + b for a, b in zip(new_s["calibration"], new_s["partitions"], strict=True)]
        else:
            old, new = old_s[part], new_s[part]
        o, n = statistics.median(old), statistics.median(new)
        out[part] = o / n
        print(
            f"  {part:>12}: old {o:6.2f} s, new {n:6.2f} s (medians of {REPEATS}; "
            f"new {min(new):.2f}–{max(new):.2f} s) = {o / n:.2f}x"
        )
    print(f"RATIO old / new, all tables: {out['all']:.2f}x")
    return out


if __name__ == "__main__":
    print(f"machine: {machine()}\n")
    main()
