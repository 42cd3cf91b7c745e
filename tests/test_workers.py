"""Worker processes: families made with the build's pool of workers equal those made in one
process, and an error in one partition's work ends the others at once."""

from __future__ import annotations

import contextlib
import dataclasses
import signal
import time
from pathlib import Path
from typing import Any

import pandas as pd
import psutil
import pytest

from site_builder.errors import ConfigError
from site_builder.families import all_families
from site_builder.families.driver import compute_metrics
from site_builder.forked import worker_pool
from site_builder.incremental import BuildCache
from site_builder.render.driver import render_site
from site_builder.sitedata import BuildState, SiteData


def _fresh(site: SiteData, memo: Any = None) -> SiteData:
    """``site``'s inputs with a new build state and cache (``memo`` the build cache)."""
    return dataclasses.replace(
        site,
        state=BuildState(facts=dict(site.state.facts)),
        cache=dataclasses.replace(site.cache, store=memo, recomputed_players={}, group_counts={}),
    )


def _tree(folder: Path) -> dict[str, bytes]:
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in folder.rglob("*.*")}


def test_families_with_the_builds_workers_give_the_same_site(small_site, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """The families' partitions computed in the build's pool of workers (forked from the
    server, not the build) give the same results, keys and pages as in one process."""
    families = all_families()
    made = {}
    me = psutil.Process()
    shared = small_site.partitions
    for workers in (1, 2):
        with BuildCache(tmp_path / f"cache{workers}") as cache, worker_pool(workers) as pool:
            assert (pool is None) == (workers == 1)
            before = {p.pid for p in me.children(recursive=True)}
            shared.workers, shared.computed = workers, {}
            site = _fresh(small_site)
            seconds: dict[str, float] = {}
            try:
                names = compute_metrics(site, families, cache, "data", seconds)
            finally:
                shared.workers = 1
            started = {p.pid for p in me.children(recursive=True)} - before
            assert bool(started) == (workers == 2)  # the partitions ran in the pool
            assert set(seconds) == {f.name for f in families}
            assert shared.computed
            # The last build's groups a family read are not held after it.
            assert not site.cache._group_batches
            keys = {f.name: cache.get(f"family-key|{f.name}") for f in families}
            render_site(site, families, tmp_path / f"out{workers}")
            made[workers] = (
                names,
                keys,
                site.cache.recomputed_players,
                site.cache.group_counts,
                sorted(site.state.facts),
                _tree(tmp_path / f"out{workers}"),
            )
            # The results were kept in the build cache: nothing is computed again.
            again = _fresh(small_site)
            assert compute_metrics(again, families, cache, "data", None) == []
        # The pool's server ended with the pool: it does not sit beside the render's processes.
        assert not [p for p in _living(me) if "forkserver" in _command(p)]
    assert made[2] == made[1]


def _living(me: psutil.Process) -> list[psutil.Process]:
    living = []
    for p in me.children(recursive=True):
        with contextlib.suppress(psutil.Error):  # it may end while it is looked at
            if p.status() != psutil.STATUS_ZOMBIE:
                living.append(p)
    return living


def _command(p: psutil.Process) -> str:
    try:
        return " ".join(p.cmdline())
    except psutil.Error:
        return ""


def _fail_or_sleep(rows: pd.DataFrame, fail_rows: int) -> int:
    if len(rows) == fail_rows:
        raise ConfigError("[results] gm_min = 9 exceeds gm_max = 1")
    time.sleep(3600)
    return 0


def test_an_error_in_a_partition_fails_at_once_and_ends_the_workers(small_site) -> None:  # type: ignore[no-untyped-def]
    """One partition's work fails while the others would run for an hour: the error comes at
    once, and leaving the pool ends its workers."""
    parts = small_site.partitions
    sizes = [len(parts.read(p, ["ply"])) for p in parts.parts()]
    # The second task fails while a worker runs the first: the error does not wait for it.
    assert len(sizes) > 2 and sizes[0] != sizes[1]

    def hung(*_: object) -> None:
        raise AssertionError("the build waited for the other partitions")

    me = psutil.Process()
    before = {p.pid for p in me.children(recursive=True)}
    old = signal.signal(signal.SIGALRM, hung)
    signal.alarm(120)  # a hang detector, not a timing: the other workers sleep for an hour
    memo, parts.cache = parts.cache, dataclasses.replace(parts.cache, store=None)
    try:
        with pytest.raises(ConfigError, match="gm_min"), worker_pool(2):
            parts.workers = 2
            parts.map(_fail_or_sleep, sizes[1], columns=["ply"])
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)
        parts.workers, parts.cache = 1, memo
    # What stays is multiprocessing's resource tracker, which ends with this process; the
    # workers and their server are gone.
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and _pool_workers(me, before):
        time.sleep(0.1)
    assert not _pool_workers(me, before)


def _pool_workers(me: psutil.Process, before: set[int]) -> list[psutil.Process]:
    return [p for p in _living(me) if p.pid not in before and p.ppid() != me.pid]
