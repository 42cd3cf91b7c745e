"""Writing the site: only pages whose inputs changed are rendered, only changed bytes written.

Every page gets a digest of its inputs (template sources, shared context and its own context).
A page whose digest matches the last build's is kept as it is instead of being rendered, and
so is a rendered page whose bytes equal the old file's. Only new and changed files are
written, into a staging folder that :func:`~site_builder.render.writer.commit_changes` then
moves into place, so a killed build leaves the previous site intact, and unchanged files keep
their inode and modification time.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import os
import pickle
from collections.abc import Callable, Collection, Mapping, Sequence
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import jinja2

from site_builder.forked import ctrl_c_held, fork_pool, fresh_pool, release_free_memory
from site_builder.render.ledger import PageDigests, PageSetKeys, PathSet, path_key
from site_builder.render.writer import (
    WORK,
    Page,
    PageSet,
    environment,
    fast_pickle,
    page_bytes,
    templates_dir,
)
from site_builder.targets import recorded_site


@dataclass
class WriteStats:
    rendered: int = 0  # pages whose template ran
    reused: int = 0  # pages whose inputs were unchanged: kept without rendering
    sets_reused: int = 0  # page sets (a player's pages) kept without being made
    pages: int = 0  # pages of the site (downloads included, assets not)
    changed: list[str] = field(default_factory=list)  # files whose bytes are new or different
    unchanged: int = 0  # files identical to the previous build's
    removed: list[str] = field(default_factory=list)  # files of the previous build now gone
    files: list[str] = field(default_factory=list)  # every file of the new site


def tree_digest(folder: Path, pattern: str = "*") -> str:
    """sha1 over the relative paths and bytes of every file under ``folder``."""
    h = hashlib.sha1()
    for path in sorted(p for p in folder.rglob(pattern) if p.is_file()):
        h.update(path.relative_to(folder).as_posix().encode())
        h.update(b"\0")
        h.update(path.read_bytes())
    return h.hexdigest()


def templates_digest() -> str:
    return tree_digest(templates_dir())


def _inputs_digest(inputs: Any, shared: str) -> str | None:
    """Digest of what a page is made from; None when it cannot be pickled.

    A :class:`Deferred` value pickles as its key. The pickler runs without its memo ("fast"
    mode), so the bytes depend on the values only, not on which equal objects happen to be
    shared (a rebuild from the memo shares less).
    """
    try:
        data = fast_pickle(inputs)
    except (pickle.PicklingError, TypeError, AttributeError, RecursionError, ValueError):
        return None
    return hashlib.sha1(shared.encode() + data).hexdigest()


def _page_digest(page: Page, shared: str) -> str | None:
    return _inputs_digest((page.template, page.context), shared)


#: Set to 1 to make every page set anyway and check that an unchanged key meant unchanged
#: pages (the incremental scenario test runs with it).
CHECK_KEYS = "SITE_BUILDER_CHECK_PAGE_KEYS"


class StalePageKey(AssertionError):
    """A page set's key was unchanged but its pages were not: the key misses an input."""


def _place(staging: str, path: str, data: bytes, made: set[str]) -> None:
    """Write ``data`` at ``staging/path``."""
    target = os.path.join(staging, path)
    folder = os.path.dirname(target)
    if folder not in made:
        os.makedirs(folder, exist_ok=True)
        made.add(folder)
    with open(target, "wb") as f:
        f.write(data)


def _same_bytes(old: str, data: bytes) -> bool:
    return os.path.getsize(old) == len(data) and Path(old).read_bytes() == data


@dataclass
class _Part:
    """What one share of the pages gave: filled by :func:`_write_share`."""

    rendered: int = 0
    reused: int = 0
    sets_reused: int = 0
    unchanged: int = 0
    changed: list[str] = field(default_factory=list)
    written: list[str] = field(default_factory=list)
    digests: PageDigests = field(default_factory=PageDigests)
    sets: PageSetKeys = field(default_factory=PageSetKeys)
    extra: Any = None  # what the worker hook harvested (fragments rendered on the way)


@dataclass
class _Job:
    """Everything a share of the pages needs; a forked worker inherits it."""

    items: Sequence[Page | PageSet]
    env: jinja2.Environment | None  # None only while sent to a new worker (Remake)
    common: dict[str, Any]
    before: str
    stage: str
    old_files: PathSet
    old_digests: PageDigests
    old_sets: PageSetKeys
    shared: str
    check: bool
    hooks: WorkerHooks | None = None


@dataclass(frozen=True)
class WorkerHooks:
    """How a forked render worker takes over from the parent: ``start()`` runs first in the
    worker (e.g. to open its own connection to the build cache), ``harvest()`` after each
    share returns what the share left behind, and the parent hands it to ``absorb``."""

    start: Callable[[], None]
    harvest: Callable[[], Any]
    absorb: Callable[[Any], None]


def _write_share(job: _Job, indices: Sequence[int]) -> _Part:
    """Make, render and place the items at ``indices`` (the pages of a share are independent
    of every other share's)."""
    part = _Part()
    made: set[str] = set()  # folders created in staging
    digests: dict[str, str] = {}  # the share's pages' (a table when the share ends)
    sets: dict[str, tuple[str, list[str]]] = {}
    env, common, before, old_files = job.env, job.common, job.before, job.old_files
    assert env is not None

    def unchanged(page: Page) -> bool:
        if page.template:
            old = os.path.join(before, page.path)
            return page.path in old_files and _same_bytes(old, page_bytes(page, env, common))
        return bool(_page_digest(page, job.shared) == job.old_digests.get(page.path))

    def emit(page: Page, digest: str | None) -> None:
        """Render and place ``page`` unless its digest or its bytes are the last build's."""
        path_of = path_key(page.path)
        old = os.path.join(before, page.path) if old_files.has(path_of) else None
        if digest is not None:
            digests[page.path] = digest
        row = job.old_digests.row_of(path_of) if digest is not None and old is not None else -1
        if row >= 0 and job.old_digests.value(row) == digest:
            part.reused += 1
            part.unchanged += 1
            part.written.append(page.path)
            return
        data = page_bytes(page, env, common)
        if page.template:
            part.rendered += 1
        if old is not None and _same_bytes(old, data):
            part.unchanged += 1
        else:
            _place(job.stage, page.path, data, made)
            part.changed.append(page.path)
        part.written.append(page.path)

    # Each item is written before the next is made: a share never holds more than one
    # subject's pages.
    for i in indices:
        item = job.items[i]
        if not isinstance(item, PageSet):
            emit(item, _page_digest(item, job.shared))
            continue
        key = None if item.key is None else _inputs_digest(item.key_value(), job.shared)
        last = None if item.key is None else job.old_sets.get(item.name)
        rows: list[int] = []  # the old digests' rows of the set's pages
        if key is not None and last is not None and last[0] == key:
            for path in last[1]:
                path_of = path_key(path)
                row = job.old_digests.row_of(path_of)
                if row < 0 or not old_files.has(path_of):
                    break
                rows.append(row)
        reuse = last is not None and len(rows) == len(last[1]) and last[0] == key
        if not reuse or job.check:
            fresh = item.make()
            if item.release is not None:
                item.release()
            if reuse and last is not None:
                stale = sorted(
                    {p.path for p in fresh} ^ set(last[1])
                    | {p.path for p in fresh if not unchanged(p)}
                )
                if stale:
                    raise StalePageKey(f"{item.name}: unchanged key, changed pages {stale}")
            if not reuse:
                if key is not None:
                    sets[item.name] = (key, sorted(p.path for p in fresh))
                for page in fresh:
                    # A templated page of a remade set: its set's key changed, so its bytes
                    # almost always did; it is rendered without a digest of its context, and
                    # recorded under the key.
                    keyed = f"set {key}" if key is not None and page.template else None
                    emit(page, keyed or _page_digest(page, job.shared))
                del fresh  # the pages and their rows, before the next item is made
                if item.key is None:  # made in every build: a family's pages, the largest
                    release_free_memory()
                continue
        if item.release is not None:
            item.release()
        assert last is not None
        sets[item.name] = last
        part.sets_reused += 1
        for path, row in zip(last[1], rows, strict=True):
            digests[path] = job.old_digests.value(row)
            part.reused += 1
            part.unchanged += 1
            part.written.append(path)
    part.digests, part.sets = PageDigests(digests), PageSetKeys(sets)
    # What the share's pages freed goes back to the system: a family's lists leave hundreds
    # of megabytes of freed heap at scale, which would stay in the process's RSS.
    release_free_memory()
    if job.hooks is not None:
        part.extra = job.hooks.harvest()
    return part


@dataclass(frozen=True)
class Remake:
    """How a render worker started as a new process makes the job's items, Jinja
    environment and hooks itself, instead of inheriting them from a fork of the build:
    ``make(path)`` (a module-level function) reads what the build left at ``path``."""

    make: Callable[[str], tuple[Sequence[Page | PageSet], jinja2.Environment, WorkerHooks]]
    path: str


#: The job a worker serves (set in the parent just before the workers fork, or made by a
#: new worker from a :class:`Remake`).
_JOB: _Job | None = None


def _worker_start() -> None:
    assert _JOB is not None
    if _JOB.hooks is not None:
        _JOB.hooks.start()


def _fresh_worker_start(remake: Remake, plain: _Job) -> None:
    """In a new worker: the job's items made again, then the job as a forked worker's."""
    global _JOB
    items, env, hooks = remake.make(remake.path)
    _JOB = dataclasses.replace(plain, items=items, env=env, hooks=hooks)
    _worker_start()


def _worker_share(indices: list[int]) -> _Part:
    assert _JOB is not None
    return _write_share(_JOB, indices)


#: Shares per process: small enough that the processes end together (a worker holds the share
#: it runs and the next it was sent, which this process can no longer take: at 30x, 8 a
#: process left shares of about 4 s), large enough that sending each share's results back
#: costs little.
_SHARES_PER_PROCESS = 32


def _shares(items: int, count: int, own: int = 0) -> list[list[int]]:
    """``items`` indices dealt round-robin into at most ``count`` shares, after the first
    ``own`` indices, a share each."""
    n = max(0 if own else 1, min(items - own, count))
    return [[i] for i in range(own)] + [list(range(k, items, n)) for k in range(own, own + n)]


def _made_each_build(items: Sequence[Page | PageSet]) -> int:
    """How many items lead the list that are made in every build (a family's pages as one
    item): long to make, so they go first, one a share, and the processes even out after."""
    n = 0
    while n < len(items) and isinstance(item := items[n], PageSet) and item.key is None:
        n += 1
    return n


def _in_workers(job: _Job, workers: int, remake: Remake | None = None) -> list[_Part]:
    """The items shared between this process and ``workers - 1`` others: new processes that
    make the items again (``remake``), else forked ones, which inherit the job (page sets
    hold closures over the site, which cannot be sent to another process). Items are dealt
    round-robin into shares, so each share gets its part of every family's pages. The
    workers take shares from the front of the queue, this process from the back (the
    shares it can still cancel), until they meet."""
    global _JOB
    shares = _shares(len(job.items), workers * _SHARES_PER_PROCESS, _made_each_build(job.items))
    if remake is None:
        _JOB = job
        pool_of = fork_pool(workers - 1, _worker_start)
    else:
        plain = dataclasses.replace(job, items=(), env=None, hooks=None)
        pool_of = fresh_pool(workers - 1, functools.partial(_fresh_worker_start, remake, plain))
    try:
        with pool_of as pool:
            # An error or Ctrl-C ends the workers at once (fork_pool).
            with ctrl_c_held():  # the workers start at the first task
                futures = [pool.submit(_worker_share, share) for share in shares]
            here = [
                _write_share(job, share)
                for future, share in zip(reversed(futures), reversed(shares), strict=True)
                if future.cancel()
            ]
            return [f.result() for f in futures if not f.cancelled()] + here
    except BrokenProcessPool:
        # A worker died (killed, out of memory): every page again, in this process. Files
        # already placed in staging are simply written again.
        return [_write_share(job, range(len(job.items)))]
    finally:
        _JOB = None


def write_site(
    items: Sequence[Page | PageSet],
    assets: dict[str, bytes],
    staging: Path,
    common: dict[str, Any],
    previous: Path,
    old_digests: PageDigests | Mapping[str, str],
    shared_digest: str,
    bytecode_dir: Path | None = None,
    old_sets: PageSetKeys | Mapping[str, tuple[str, list[str]]] | None = None,
    env: jinja2.Environment | None = None,
    workers: int = 1,
    hooks: WorkerHooks | None = None,
    old_files: Collection[str] | None = None,
    remake: Remake | None = None,
) -> tuple[WriteStats, PageDigests, PageSetKeys]:
    """Write the pages and ``assets`` whose bytes differ from ``previous``'s into ``staging``.

    A :class:`PageSet` whose key digest equals the last build's (``old_sets``) is kept
    without being made. With ``workers`` > 1 the pages are made and rendered in that many
    processes: new ones that make the items again with ``remake``, else forked ones
    (``hooks`` let them take over the build cache). Returns (stats, new
    page digests, new page-set keys and paths); the stats list the changed and removed
    files :func:`commit_changes` applies.

    ``old_files`` are the previous build's files in ``previous`` (by default those on its
    record there): only they are compared, kept or removed; no other file is looked at.
    """
    job = _Job(
        items=items,
        env=env or environment(bytecode_dir),
        common=common,
        before=str(previous),
        stage=str(staging),
        old_files=PathSet.of(
            (recorded_site(previous, WORK) or set()) if old_files is None else old_files
        ),
        old_digests=PageDigests.of(old_digests),
        old_sets=PageSetKeys.of(old_sets),
        shared=shared_digest,
        check=os.environ.get(CHECK_KEYS) == "1",
        hooks=hooks,
    )
    if workers > 1 and len(items) > 1:
        parts = _in_workers(job, workers, remake)
        if hooks is not None:
            for part in parts:
                hooks.absorb(part.extra)
    else:  # in shares too: the hooks run after each
        parts = [_write_share(job, share) for share in _shares(len(items), _SHARES_PER_PROCESS)]
    stats = WriteStats()
    written: set[str] = set()
    for part in parts:
        stats.rendered += part.rendered
        stats.reused += part.reused
        stats.sets_reused += part.sets_reused
        stats.unchanged += part.unchanged
        stats.changed += part.changed
        written.update(part.written)
    stats.changed.sort()
    stats.pages = len(written)
    made: set[str] = set()
    for path, data in sorted(assets.items()):
        old = os.path.join(job.before, path) if path in job.old_files else None
        if old is None or not _same_bytes(old, data):
            _place(job.stage, path, data, made)
            stats.changed.append(path)
        written.add(path)
    stats.removed = sorted(p for p in job.old_files if p not in written)
    stats.files = sorted(written)
    digests = PageDigests.joined(part.digests for part in parts)
    sets = PageSetKeys.joined(part.sets for part in parts)
    return stats, digests, sets


def asset_files() -> dict[str, bytes]:
    """Every local script and style: the site makes no request off the machine."""
    import plotly

    out = {
        "assets/plotly.min.js": (
            Path(plotly.__file__).parent / "package_data" / "plotly.min.js"
        ).read_bytes()
    }
    for item in sorted((templates_dir() / "static").iterdir()):
        if item.is_file():
            out[f"assets/{item.name}"] = item.read_bytes()
    return out
