"""Worker processes: families made with the build's pool of workers equal those made in one
process, and an error in one partition's work ends the others at once."""

from __future__ import annotations

import contextlib
import dataclasses
import os
import shutil
import signal
import threading
import time
from collections.abc import Iterator
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
from tests.conftest import DATA, build_quietly, make_content, requires_engine


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
                with _children_seen(me) as seen:
                    names = compute_metrics(site, families, cache, "data", seconds)
            finally:
                shared.workers = 1
            started = seen - before
            assert bool(started) == (workers == 2)  # the partitions ran in the pool
            # Idle between tasks, the pool's workers have ended (forked.end_idle_workers).
            assert not {p.pid for p in _living(me)} & started
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


@contextlib.contextmanager
def _children_seen(me: psutil.Process) -> Iterator[set[int]]:
    """The processes below ``me`` seen inside the block (looked at every 5 ms)."""
    seen: set[int] = set()
    done = threading.Event()

    def watch() -> None:
        while not done.wait(0.005):
            with contextlib.suppress(psutil.Error):
                seen.update(p.pid for p in me.children(recursive=True))

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    try:
        yield seen
    finally:
        done.set()
        watcher.join()


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


def _name(item: Any) -> str:
    """A page set's name, or a page's path."""
    return str(getattr(item, "name", None) or item.path)


@pytest.fixture(scope="module")
def unanalysed_site(tmp_path_factory: pytest.TempPathFactory) -> SiteData:
    """Real games, none analysed: each game page's plies are made from its record."""
    from site_builder.analysis.stage import prepare
    from site_builder.config import load_settings
    from site_builder.stats import BuildStats
    from tests.conftest import DATA, make_content

    root = tmp_path_factory.mktemp("unanalysed")
    games = DATA / "small-site" / "games"
    content = make_content(
        root,
        {p.name: p for p in (games / "WorldChamp1886.pgn", games / "tatamast22.pgn")},
        "[analysis]\nclasses = []\n",
    )
    site = prepare(
        content,
        load_settings(content),
        BuildStats(),
        cache_dir=root / "c",
        progress=False,
        echo=lambda s: None,
    )
    assert site is not None and not site.analysed
    return site


@pytest.mark.parametrize("which", ["small_site", "unanalysed_site"])
def test_render_workers_started_afresh_give_the_same_site(
    which: str, request, tmp_path: Path, monkeypatch
) -> None:  # type: ignore[no-untyped-def]
    """The render's worker started as a new process (it reads the site the build pickled
    and makes the families' items again) writes the same site as one process, the plies of
    games the build cache does not hold (made from the records) included; the pickled site
    is removed after, and nothing else in its folder is touched."""
    from site_builder.analysis.stage import PliesFromRecord
    from site_builder.render import driver, output

    given = request.getfixturevalue(which)
    started = []
    real = output.fresh_pool

    def counting(*args: Any, **kwargs: Any) -> Any:
        started.append(args)
        return real(*args, **kwargs)

    monkeypatch.setattr(output, "fresh_pool", counting)
    here: list[int] = []  # the items of the shares this process wrote (not the worker)
    jobs: list[Any] = []
    slow = False  # while the new worker starts
    real_share = output._write_share

    def share_here(job: Any, indices: Any) -> Any:
        here.extend(indices)
        jobs.append(job)
        # Each share holds pages of every kind: a few slow ones here leave the new worker
        # (a second or two to start) shares of its own.
        if slow and 1 < len(jobs) <= 6:
            time.sleep(0.5)
        return real_share(job, indices)

    monkeypatch.setattr(output, "_write_share", share_here)
    families = all_families()
    assert given.game_store is not None
    assert isinstance(given.game_store.make_plies, PliesFromRecord)
    folder = tmp_path / "build-cache"
    folder.mkdir()
    (folder / "theirs.txt").write_text("not the render's")
    trees, wrote_here = [], []
    for workers, new in ((1, None), (2, driver.NewWorkers(all_families, folder))):
        with BuildCache(tmp_path / f"cache{workers}") as cache:
            site = _fresh(given, cache)
            compute_metrics(site, families, cache, "data", None)
            here.clear()
            jobs.clear()
            slow = new is not None
            render_site(
                site, families, tmp_path / f"out{workers}", workers=workers, new_workers=new
            )
            trees.append(_tree(tmp_path / f"out{workers}"))
            wrote_here.append(len(set(here)))
    # The new worker wrote the other items, game pages among them.
    items = jobs[-1].items
    theirs = [_name(items[i]) for i in set(range(len(items))) - set(here)]
    assert 0 < wrote_here[1] < wrote_here[0]
    assert any(n.startswith(("game|", "games/")) for n in theirs)
    assert len(started) == 1  # the second render's worker was a new process
    assert trees[1] == trees[0]
    moves = "1.</th>" if which == "unanalysed_site" else "<td>"
    assert sum(moves in v.decode() for k, v in trees[0].items() if k.startswith("games/")) > 10
    assert sorted(p.name for p in folder.iterdir()) == ["theirs.txt"]


def test_a_render_removes_the_pickles_renders_killed_before_it_left(
    small_site, tmp_path: Path
) -> None:  # type: ignore[no-untyped-def]
    """A build killed during its render leaves the site it pickled for its new workers; the
    next render removes it, as it is on the build cache's record and its build is gone. A
    pickle of a build still rendering stays, and so do files not on the record, even named
    like a pickle."""
    import subprocess
    import sys

    from site_builder.memo import Kind, entry
    from site_builder.render import driver

    folder = tmp_path / "build-cache"
    folder.mkdir()
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    running = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        left = f"render-{gone.pid}-abc123.pickle"
        other = f"render-{running.pid}-def456.pickle"
        stray = "render-1-zzz999.pickle"  # named alike, on no record
        for name in (left, other, stray, "theirs.txt"):
            (folder / name).write_bytes(b"x")
        seen = []
        with BuildCache(folder) as cache:
            record = entry(Kind.RENDER_PICKLES)
            cache.set(record, {left: gone.pid, other: running.pid})
            site = _fresh(small_site, cache)
            new = driver.NewWorkers(all_families, folder)
            with driver._site_for_workers(site, all_families(), None, new) as remake:
                assert remake is not None
                seen = sorted(p.name for p in folder.glob("render-*.pickle"))
                mine = Path(remake.path).name
                assert cache.get(record) == {other: running.pid, mine: os.getpid()}
            assert cache.get(record) == {other: running.pid}
        assert seen == sorted([mine, other, stray])
        kept = sorted(p.name for p in folder.iterdir() if not p.name.startswith("cache"))
        assert kept == sorted([other, stray, "theirs.txt"])
    finally:
        running.kill()
        running.wait()


@requires_engine
def test_a_small_site_is_built_in_one_process(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A site whose game files hold fewer than ``ONE_PROCESS_BELOW_BYTES`` is built without a
    worker pool or a render worker; from it on, with them (on a machine with more than one
    core), and the pages are the same."""
    import site_builder.build as build_module
    from site_builder.forked import processes
    from site_builder.render import output

    pools: list[int] = []
    renders: list[Any] = []
    real_pool, real_fresh = build_module.worker_pool, output.fresh_pool

    def pool(workers: int) -> Any:
        pools.append(workers)
        return real_pool(workers)

    def fresh(*args: Any, **kwargs: Any) -> Any:
        renders.append(args)
        return real_fresh(*args, **kwargs)

    monkeypatch.setattr(build_module, "worker_pool", pool)
    monkeypatch.setattr(output, "fresh_pool", fresh)
    cores = processes()
    games = (DATA / "small-site/games/WorldChamp1886.pgn").read_text(encoding="utf-8")
    three = "\n\n[Event ".join(games.split("\n\n[Event ")[:3]) + "\n"
    content = make_content(tmp_path, {"wc.pgn": three})
    shutil.copytree(DATA / "small-site/analysis", content / "analysis")
    shutil.copyfile(DATA / "small-site/site.toml", content / "site.toml")
    size = (content / "games" / "wc.pgn").stat().st_size
    trees = []
    for threshold in (size + 1, size):  # below it, then at it
        monkeypatch.setattr(build_module, "ONE_PROCESS_BELOW_BYTES", threshold)
        out = tmp_path / f"out{threshold}"
        assert build_quietly(content, out, tmp_path / "cache").games == 3
        trees.append(_tree(out))
    assert pools == [1, cores] and processes() == cores  # one process only in the first
    assert len(renders) == (1 if cores > 1 else 0)
    assert trees[0] == trees[1] and len(trees[0]) > 50
