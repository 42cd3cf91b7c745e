"""The evaluation cache on the demo: a warm rebuild makes 0 engine calls.

Judged by: engine calls on the warm rebuild (target 0). Also reports cache lookups per
second, bytes per cached position and the position-dedupe rate.
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path

from bench.common import CONTENT, ROOT
from site_builder.analysis.cache import EvalCache
from site_builder.analysis.positions import missing_tasks
from site_builder.analysis.stage import make_spec, prepare
from site_builder.build import build
from site_builder.config import load_settings
from site_builder.stats import BuildStats

CACHE = ROOT / ".cache" / "analysis"


def main() -> dict[str, float]:
    settings = load_settings(CONTENT)
    with tempfile.TemporaryDirectory() as tmp:
        start = time.perf_counter()
        stats = build(
            CONTENT,
            Path(tmp) / "out",
            settings,
            cache_dir=CACHE,
            progress=False,
            echo=lambda s: None,
        )
        warm = time.perf_counter() - start
    site = prepare(
        CONTENT, settings, BuildStats(), cache_dir=CACHE, progress=False, echo=lambda s: None
    )
    assert site is not None and site.spec is not None and site.game_store is not None
    store = site.game_store
    wanted = [
        (p.position, p.played)
        for gid in sorted(site.analysed)
        for p in store.plies(gid)
        if p.position and not p.forced and p.move_number >= settings.analysis.first_move
    ]
    with EvalCache(CACHE) as cache:
        start = time.perf_counter()
        missing_tasks(wanted, make_spec(settings, site.spec.engine), cache)
        lookups = time.perf_counter() - start
        entries, volume = len(cache), cache.volume()
    unique = len({p for p, _ in wanted})
    print(
        f"cache: demo content, {len(site.games)} games, {len(wanted)} analysed moves, "
        f"{unique} unique positions"
    )
    print(
        f"  warm rebuild: {warm:.1f} s, {stats.analysed} positions analysed, "
        f"{stats.searches} engine searches"
    )
    print(f"  cache lookups: {len(wanted) / lookups:,.0f} per second")
    print(
        f"  cache size: {volume / entries:.0f} bytes per entry ({entries} entries, "
        f"{volume / 2**20:.1f} MiB)"
    )
    print(
        f"  position dedupe: {100 * (1 - unique / len(wanted)):.1f}% of analysed moves share "
        "a position analysed once"
    )
    print(f"RATIO engine calls on a warm rebuild: {stats.searches} (target 0)")
    return {
        "warm": warm,
        "searches": stats.searches,
        "lookups_per_s": len(wanted) / lookups,
        "bytes_per_entry": volume / entries,
        "dedupe": 1 - unique / len(wanted),
    }


if __name__ == "__main__":
    main()
