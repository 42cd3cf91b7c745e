"""Worker processes: families and pages made in forked workers equal those made in one."""

from __future__ import annotations

import dataclasses
import signal
import time
from pathlib import Path
from typing import Any

import pytest

from site_builder.errors import ConfigError
from site_builder.families import all_families
from site_builder.families.driver import compute_metrics
from site_builder.incremental import BuildCache
from site_builder.render.driver import render_site
from site_builder.sitedata import BuildState, Family, SiteData


def _fresh(site: SiteData, memo: Any = None) -> SiteData:
    """``site``'s inputs with a new build state and cache (``memo`` the build cache)."""
    return dataclasses.replace(
        site,
        state=BuildState(facts=dict(site.state.facts)),
        cache=dataclasses.replace(site.cache, store=memo, recomputed_players={}, group_counts={}),
    )


def _tree(folder: Path) -> dict[str, bytes]:
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in folder.rglob("*.*")}


def test_families_computed_in_a_worker_give_the_same_site(small_site, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    families = all_families()
    assert [f.name for f in families if f.in_worker] == ["intrinsic", "bayesian"]
    made = {}
    for workers in (1, 2):
        with BuildCache(tmp_path / f"cache{workers}") as cache:
            site = _fresh(small_site)
            seconds: dict[str, float] = {}
            names = compute_metrics(site, families, cache, "data", seconds, workers)
            assert set(seconds) == {f.name for f in families}
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
            # The worker's results were kept in the build cache: nothing is computed again.
            again = _fresh(small_site)
            assert compute_metrics(again, families, cache, "data", None, workers) == []
    assert made[2] == made[1]


def test_a_family_computed_in_a_worker_may_not_read_another(small_site) -> None:  # type: ignore[no-untyped-def]
    first = Family("first", compute=lambda site: 1, pages=lambda site: [])
    reader = Family(
        "reader",
        compute=lambda site: site.state.results["first"] + 1,
        pages=lambda site: [],
        in_worker=True,
    )
    for workers in (1, 2):
        with pytest.raises(RuntimeError, match="reader is computed in a worker but read"):
            compute_metrics(_fresh(small_site), [first, reader], None, "", None, workers)


def test_an_error_before_the_worker_finishes_fails_at_once(small_site) -> None:  # type: ignore[no-untyped-def]
    def bad(site: SiteData) -> None:
        raise ConfigError("[results] gm_min = 9 exceeds gm_max = 1")

    families = [
        Family("bad", compute=bad, pages=lambda site: []),
        Family(
            "slow", compute=lambda site: time.sleep(3600), pages=lambda site: [], in_worker=True
        ),
    ]

    def hung(*_: object) -> None:
        raise AssertionError("the build waited for the worker's families")

    old = signal.signal(signal.SIGALRM, hung)
    signal.alarm(120)  # a hang detector, not a timing: the worker sleeps for an hour
    try:
        with pytest.raises(ConfigError, match="gm_min"):
            compute_metrics(_fresh(small_site), families, None, "", None, 2)
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)
