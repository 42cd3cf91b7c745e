"""Rendering the site: every family's pages, only the new and changed ones made and
rendered (in forked workers on more than one core), written into a staging folder and moved
into place.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import pickle
import re
import tempfile
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jinja2

from site_builder import __version__
from site_builder.forked import keep
from site_builder.incremental import (
    BuildCache,
    checked_databases,
    code_digest,
    count_as_checked,
    digest,
)
from site_builder.memo import Kind, entry
from site_builder.render.core_pages import store_fragments
from site_builder.render.ledger import PageDigests, PageSetKeys
from site_builder.render.output import (
    Remake,
    WorkerHooks,
    WriteStats,
    asset_files,
    templates_digest,
    write_site,
)
from site_builder.render.writer import (
    Chained,
    Page,
    PageSet,
    commit_changes,
    environment,
    made_where_rendered,
    staging_dir,
)
from site_builder.sitedata import BuildState, Family, SiteData
from site_builder.targets import OUTPUT_RECORD


@dataclass
class RenderResult:
    pages: int
    written: WriteStats


@dataclass(frozen=True)
class NewWorkers:
    """The render's workers start as new processes, not forks of the build: the build
    pickles the site into ``folder`` (then removes the file), and each worker reads it and
    makes the families (``families``, a module-level function) and their items again. A
    worker then holds what the pages read, not a copy of the build's whole memory."""

    families: Callable[[], list[Family]]
    folder: Path


def render_site(
    site: SiteData,
    families: list[Family],
    output_dir: Path,
    old_digests: PageDigests | None = None,
    bytecode_dir: Path | None = None,
    old_sets: PageSetKeys | None = None,
    workers: int = 1,
    old_files: set[str] | None = None,
    new_workers: NewWorkers | None = None,
) -> tuple[RenderResult, dict[str, Any]]:
    """Write the new and changed files into a staging folder and move them into place.

    Pages whose inputs match ``old_digests`` (from the last build) are kept, not rendered;
    page sets whose key matches ``old_sets`` are kept without being made; the rest are made
    and rendered in ``workers`` processes (forked from this one, or new ones: ``new_workers``).
    Only ``old_files`` (the previous build's, by default those on its record in
    ``output_dir``) are replaced or removed. Returns the result and what the next build
    compares with: {"pages": digests, "page_sets": keys}.
    """
    templates = templates_digest()
    site.state.templates = templates
    site.state.jinja = env = environment(bytecode_dir)
    for fam in families:
        if fam.facts is not None:
            site.state.facts.update(fam.facts(site))
    items = Chained([_items_of(fam, site) for fam in families])
    staging = staging_dir(output_dir)  # on the output's file system: moves are renames
    nav = [item for fam in families for item in fam.nav]
    common = {
        "site": site.settings.site,
        "settings": site.settings,
        "nav": nav,
        "version": __version__,
    }
    shared = digest([templates, site.cache.code or code_digest(), repr(common)])
    fresh = new_workers if workers > 1 else None
    with _site_for_workers(site, families, bytecode_dir, fresh) as remake:
        written, digests, sets = write_site(
            items,
            asset_files(),
            staging,
            common,
            output_dir,
            old_digests or PageDigests(),
            shared,
            bytecode_dir,
            old_sets,
            env,
            workers,
            _render_worker_hooks(site),
            old_files,
            remake,
        )
    if commit_changes(staging, output_dir, written.changed, written.removed, written.files):
        written.changed = sorted([*written.changed, OUTPUT_RECORD])
    store_fragments(site)
    return RenderResult(written.pages, written), {"pages": digests, "page_sets": sets}


@contextlib.contextmanager
def _site_for_workers(
    site: SiteData,
    families: list[Family],
    bytecode_dir: Path | None,
    new_workers: NewWorkers | None,
) -> Iterator[Remake | None]:
    """The site pickled for new render workers (its inputs and the build's results and
    facts, not what this process made of them), removed when the render ends."""
    if new_workers is None:
        yield None
        return
    given = BuildState(
        results=site.state.results, facts=site.state.facts, templates=site.state.templates
    )
    store = site.cache.store if isinstance(site.cache.store, BuildCache) else None
    if store is not None:
        _remove_left_pickles(store, new_workers.folder)
    fd, path = tempfile.mkstemp(
        prefix=f"render-{os.getpid()}-", suffix=".pickle", dir=new_workers.folder
    )
    if store is not None:  # on the record before a byte is written: a kill leaves no stray
        _record(store, Path(path).name, os.getpid())
    try:
        with os.fdopen(fd, "wb") as out:
            # First the build cache's files found sound: the site's unpickling opens them.
            pickle.dump(checked_databases(), out, pickle.HIGHEST_PROTOCOL)
            made = [fam.name for fam in families]
            pickle.dump(
                (dataclasses.replace(site, state=given), new_workers.families, made, bytecode_dir),
                out,
                pickle.HIGHEST_PROTOCOL,
            )
        yield Remake(_remade_items, path)
    finally:
        os.unlink(path)
        if store is not None:
            _record(store, Path(path).name, None)


#: The build cache's record of the render pickles written and not yet removed: name → pid.
_PICKLES = entry(Kind.RENDER_PICKLES)


def _record(store: BuildCache, name: str, pid: int | None) -> None:
    """Put the pickle ``name`` of build ``pid`` on the record (None: take it off), in one
    transaction (another build on the same cache may be changing the record)."""
    with store.transact():
        recorded = dict(store.get(_PICKLES) or {})
        if pid is None:
            recorded.pop(name, None)
        else:
            recorded[name] = pid
        store.set(_PICKLES, recorded)


def _remove_left_pickles(store: BuildCache, folder: Path) -> None:
    """Remove the pickles on the record whose build is gone (killed during its render): only
    files of that record, named as :func:`_site_for_workers` names them, in ``folder``."""
    recorded: dict[str, int] = dict(store.get(_PICKLES) or {})
    for name, pid in sorted(recorded.items()):
        if _alive(pid):  # another build on this cache is rendering
            continue
        path = folder / name
        if _PICKLE_NAME.fullmatch(name) and path.is_file() and not path.is_symlink():
            path.unlink()
        _record(store, name, None)


_PICKLE_NAME = re.compile(r"render-\d+-[A-Za-z0-9_]+\.pickle")


def _alive(pid: int) -> bool:
    if pid == os.getpid():
        return False  # this build's own, from an earlier render in it: long ended
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _remade_items(path: str) -> tuple[Sequence[Page | PageSet], jinja2.Environment, WorkerHooks]:
    """In a new render worker: the items, Jinja environment and hooks :func:`render_site`
    made, made again from the site the build pickled at ``path``."""
    with open(path, "rb") as f:
        count_as_checked(pickle.load(f))
        site, families_of, made, bytecode_dir = pickle.load(f)
    families = families_of()
    if [fam.name for fam in families] != made:  # the items would not be the build's
        raise RuntimeError(f"new render workers make other families than {made}")
    site.state.jinja = env = environment(bytecode_dir)
    items = Chained([_items_of(fam, site) for fam in families])
    return items, env, _render_worker_hooks(site)


def _items_of(family: Family, site: SiteData) -> Sequence[Page | PageSet]:
    """The family's items of the render: its pages as one item made where it is written
    (see :attr:`Family.pages_as_one_item`), or the items its ``pages`` returns."""
    if family.pages_as_one_item:
        return [made_where_rendered(f"family|{family.name}", lambda: _plain_pages(family, site))]
    return family.pages(site)


def _plain_pages(family: Family, site: SiteData) -> list[Page]:
    made = family.pages(site)
    pages = [p for p in made if isinstance(p, Page)]
    if len(pages) != len(made):
        raise TypeError(f"the {family.name} family's pages are made as one item: no page sets")
    return pages


def _render_worker_hooks(site: SiteData) -> WorkerHooks:
    """A forked render worker reads the build cache through its own connection (an SQLite
    connection must not be used across a fork). The fragments a process renders go into the
    build cache a few hundred at a time and when each share ends, from whichever process
    rendered them, so no process holds a share's fragments."""

    def start() -> None:
        keep(site.cache.store)
        if isinstance(site.cache.store, BuildCache):
            site.cache.store = BuildCache(site.cache.store.directory)
        site.state.new_fragments.clear()

    def harvest() -> None:
        store_fragments(site)

    return WorkerHooks(start, harvest, lambda _: None)
