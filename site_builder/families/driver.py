"""Computing the metric families: each family's result into ``site.state.results``, the last
build's when nothing it depends on changed (its code, settings sections, data and the results
it read from other families). The families run one after the other in the build's process;
their per-partition work runs in the build's workers (:mod:`site_builder.partitions`).
"""

from __future__ import annotations

import contextlib
import dataclasses
import time
from dataclasses import dataclass, field
from typing import Any

from threadpoolctl import threadpool_limits  # type: ignore[import-untyped]

from site_builder.forked import end_idle_workers, release_free_memory
from site_builder.incremental import BuildCache, code_digest, digest
from site_builder.memo import Kind, entry
from site_builder.sitedata import Family, SiteData

#: Settings sections each family's numbers depend on, besides [site] and [analysis]
#: (a family not listed depends on every section). Results of other families that a
#: family reads are tracked as it runs.
FAMILY_SETTINGS: dict[str, tuple[str, ...]] = {
    "quality": ("quality",),
    "results": ("results", "time_control"),
    "conformance": ("conformance", "content", "time_control"),
    "intrinsic": ("intrinsic",),
    "bayesian": ("bayesian", "intrinsic"),
    "agreement": (),
    "editions": (
        "editions",
        "quality",
        "results",
        "time_control",
        "intrinsic",
        "bayesian",
    ),
    "core": (),
}


class _RecordingResults(dict[str, Any]):
    """site.state.results that remembers which other families' results a family read."""

    def __init__(self, data: dict[str, Any]) -> None:
        super().__init__(data)
        self.read: set[str] = set()

    def __getitem__(self, key: str) -> Any:
        self.read.add(key)
        return super().__getitem__(key)

    def get(self, key: str, default: Any = None) -> Any:
        self.read.add(key)
        return super().get(key, default)


def compute_metrics(
    site: SiteData,
    families: list[Family],
    build_cache: BuildCache | None = None,
    data_key: str = "",
    seconds: dict[str, float] | None = None,
) -> list[str]:
    """Compute every family; returns the names of those actually recomputed.

    With a build cache, a family whose code, settings sections, data (``data_key``) and the
    results it read from other families are unchanged since the last build is not recomputed.
    Linear algebra runs on one thread: a multi-threaded BLAS sums in an order that depends on
    the machine's cores, which changed last digits of the pages from one machine to another.
    """
    with threadpool_limits(limits=1, user_api="blas"):
        return _compute_metrics(site, families, build_cache, data_key, seconds)


@dataclass
class _Metrics:
    """The state of one compute_metrics call."""

    site: SiteData
    build_cache: BuildCache | None
    data_key: str
    code: str
    sections: list[str]
    keys: dict[str, str] = field(default_factory=dict)
    fresh: set[str] = field(default_factory=set)
    seconds: dict[str, float] = field(default_factory=dict)

    def run(self, fam: Family) -> None:
        """``fam``'s result into ``site.state.results``: the last build's when nothing it depends
        on changed, else computed (and kept in the build cache)."""
        site, build_cache, keys = self.site, self.build_cache, self.keys
        used = ("site", "analysis", *FAMILY_SETTINGS.get(fam.name, tuple(self.sections)))
        own = digest(
            [
                self.code,
                fam.name,
                {s: site.settings.digest(s) for s in sorted(set(used))},
                self.data_key,
            ]
        )
        slot = entry(Kind.FAMILY, fam.name)
        # The keys apart from the result: a changed family never reads its old result.
        head = (
            build_cache.get(entry(Kind.FAMILY_KEY, fam.name)) if build_cache is not None else None
        )
        if (
            head is not None
            and head["own"] == own
            and all(keys.get(d) == k for d, k in head["deps"].items())
        ):
            memo = build_cache.get(slot) if build_cache is not None else None
            if memo is not None and memo["key"] == head["key"]:
                site.state.results[fam.name] = memo["result"]
                keys[fam.name] = memo["key"]
                if site.partitions is not None:  # what its next compute may reuse
                    site.partitions.use(head.get("partitions", ()))
                return
        recording = _RecordingResults(site.state.results)
        site.state.results = recording
        clock = time.perf_counter()
        partition_keys: set[str] = set()
        try:
            with contextlib.ExitStack() as scope:
                if site.partitions is not None:
                    partition_keys = scope.enter_context(site.partitions.recording())
                result = fam.compute(site)
        finally:
            site.state.results = dict(recording)
            site.cache.forget_last_groups()
            # What a family's global steps freed goes back to the system, not carried into
            # the next family's (or the render's workers', which would count it again).
            release_free_memory()
        self.seconds[fam.name] = time.perf_counter() - clock
        site.state.results[fam.name] = result
        deps = {d: keys.get(d, "") for d in sorted(recording.read - {fam.name})}
        keys[fam.name] = digest([own, deps])
        self.fresh.add(fam.name)
        if build_cache is not None:
            # An unpicklable result is simply not memoised.
            with contextlib.suppress(Exception):
                build_cache.set(slot, {"key": keys[fam.name], "result": result})
                build_cache.set(
                    entry(Kind.FAMILY_KEY, fam.name),
                    {
                        "own": own,
                        "deps": deps,
                        "key": keys[fam.name],
                        "partitions": tuple(sorted(partition_keys)),
                    },
                )


def _compute_metrics(
    site: SiteData,
    families: list[Family],
    build_cache: BuildCache | None,
    data_key: str,
    seconds: dict[str, float] | None,
) -> list[str]:
    end_idle_workers()  # the analysis stage's: the families' tasks start new ones
    state = _Metrics(
        site,
        build_cache,
        data_key,
        site.cache.code or code_digest(),
        [f.name for f in dataclasses.fields(site.settings)],
    )
    for fam in families:
        state.run(fam)
    if seconds is not None:
        seconds.update(state.seconds)
    return [f.name for f in families if f.name in state.fresh]
