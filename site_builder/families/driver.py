"""Computing the metric families: each family's result into ``site.state.results``, the last
build's when nothing it depends on changed (its code, settings sections, data and the results
it read from other families); on more than one core, the families marked ``in_worker`` are
computed in a forked worker while the build computes the others.
"""

from __future__ import annotations

import contextlib
import dataclasses
import time
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field
from typing import Any

from threadpoolctl import threadpool_limits  # type: ignore[import-untyped]

from site_builder.forked import fork_pool, keep
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
    workers: int = 1,
) -> list[str]:
    """Compute every family; returns the names of those actually recomputed.

    With a build cache, a family whose code, settings sections, data (``data_key``) and the
    results it read from other families are unchanged since the last build is not recomputed.
    With ``workers`` > 1, the families marked ``in_worker`` are computed in a forked process
    while this one computes the families listed before them.
    Linear algebra runs on one thread: a multi-threaded BLAS sums in an order that depends on
    the machine's cores, which changed last digits of the pages from one machine to another.
    """
    with threadpool_limits(limits=1, user_api="blas"):
        return _compute_metrics(site, families, build_cache, data_key, seconds, workers)


@dataclass
class _Metrics:
    """The state of one compute_metrics call (a forked worker inherits it)."""

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
                return
        recording = _RecordingResults(site.state.results)
        site.state.results = recording
        clock = time.perf_counter()
        try:
            result = fam.compute(site)
        except Exception as exc:
            _check_in_worker(fam, recording.read, exc)
            raise
        finally:
            site.state.results = dict(recording)
        self.seconds[fam.name] = time.perf_counter() - clock
        site.state.results[fam.name] = result
        _check_in_worker(fam, recording.read)
        deps = {d: keys.get(d, "") for d in sorted(recording.read - {fam.name})}
        keys[fam.name] = digest([own, deps])
        self.fresh.add(fam.name)
        if build_cache is not None:
            # An unpicklable result is simply not memoised.
            with contextlib.suppress(Exception):
                build_cache.set(slot, {"key": keys[fam.name], "result": result})
                build_cache.set(
                    entry(Kind.FAMILY_KEY, fam.name),
                    {"own": own, "deps": deps, "key": keys[fam.name]},
                )


def _check_in_worker(fam: Family, read: set[str], exc: Exception | None = None) -> None:
    """A family marked ``in_worker`` that read other families' results (which a worker does
    not have) is a programming error, found in one process as in several."""
    if fam.in_worker and read - {fam.name}:
        others = sorted(read - {fam.name})
        raise RuntimeError(f"family {fam.name} is computed in a worker but read {others}") from exc


@dataclass
class _Aside:
    """What a worker sends back: the results, keys and timings of its families and what
    their computation noted on the site."""

    results: dict[str, Any]
    keys: dict[str, str]
    fresh: set[str]
    seconds: dict[str, float]
    recomputed_players: dict[str, set[str]]
    group_counts: dict[str, dict[str, int]]
    #: per-partition work → partitions computed (not reused)
    partitions: dict[str, int]
    facts: dict[str, Any]


#: The metrics state and the families a forked worker computes.
_ASIDE: tuple[_Metrics, list[Family]] | None = None


def _compute_aside() -> _Aside:
    assert _ASIDE is not None
    state, families = _ASIDE
    site = state.site
    if isinstance(state.build_cache, BuildCache):
        keep(state.build_cache)
        state.build_cache = site.cache.store = BuildCache(state.build_cache.directory)
    facts = dict(site.state.facts)
    for fam in families:
        state.run(fam)
    names = {f.name for f in families}
    return _Aside(
        results={n: site.state.results[n] for n in names},
        keys={n: state.keys[n] for n in names},
        fresh=state.fresh & names,
        seconds={n: v for n, v in state.seconds.items() if n in names},
        recomputed_players=site.cache.recomputed_players,
        group_counts=site.cache.group_counts,
        partitions=dict(site.partitions.computed) if site.partitions is not None else {},
        facts={k: v for k, v in site.state.facts.items() if k not in facts or facts[k] is not v},
    )


def _compute_metrics(
    site: SiteData,
    families: list[Family],
    build_cache: BuildCache | None,
    data_key: str,
    seconds: dict[str, float] | None,
    workers: int = 1,
) -> list[str]:
    global _ASIDE
    state = _Metrics(
        site,
        build_cache,
        data_key,
        site.cache.code or code_digest(),
        [f.name for f in dataclasses.fields(site.settings)],
    )
    aside = [f for f in families if f.in_worker]
    if workers > 1 and aside:
        first = families.index(aside[0])
        if families[first : first + len(aside)] != aside:
            raise ValueError("the families computed in a worker must be listed together")
        _ASIDE = (state, aside)
        try:
            with fork_pool(1) as pool:
                future = pool.submit(_compute_aside)
                # An error here ends the worker at once (fork_pool): a bad setting is not
                # reported after the worker's families.
                for fam in families[:first]:
                    state.run(fam)
                try:
                    got: _Aside | None = future.result()
                except BrokenProcessPool:  # the worker died: its families here
                    got = None
        finally:
            _ASIDE = None
        if got is None:
            for fam in aside:
                state.run(fam)
        else:
            site.state.results.update(got.results)
            state.keys.update(got.keys)
            state.fresh |= got.fresh
            state.seconds.update(got.seconds)
            for name, players in got.recomputed_players.items():
                site.cache.recomputed_players.setdefault(name, set()).update(players)
            for name, counts in got.group_counts.items():
                site.cache.group_counts.setdefault(name, counts)
            if site.partitions is not None:
                for name, n in got.partitions.items():
                    done = site.partitions.computed
                    done[name] = done.get(name, 0) + n
            site.state.facts.update(got.facts)
        for fam in families[first + len(aside) :]:
            state.run(fam)
    else:
        for fam in families:
            state.run(fam)
    if seconds is not None:
        seconds.update(state.seconds)
    return [f.name for f in families if f.name in state.fresh]
