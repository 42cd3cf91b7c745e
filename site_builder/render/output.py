"""Writing the site: only pages whose inputs changed are rendered, only changed bytes written.

Every page gets a digest of its inputs (template sources, shared context and its own context).
A page whose digest matches the last build's is kept as it is instead of being rendered, and
so is a rendered page whose bytes equal the old file's. Only new and changed files are
written, into a staging folder that :func:`~site_builder.render.writer.commit_changes` then
moves into place, so a killed build leaves the previous site intact, and unchanged files keep
their inode and modification time.
"""

from __future__ import annotations

import hashlib
import os
import pickle
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import jinja2

from site_builder.render.writer import (
    Page,
    PageSet,
    environment,
    fast_pickle,
    page_bytes,
    templates_dir,
)


@dataclass
class WriteStats:
    rendered: int = 0  # pages whose template ran
    reused: int = 0  # pages whose inputs were unchanged: kept without rendering
    sets_reused: int = 0  # page sets (a player's pages) kept without being made
    pages: int = 0  # pages of the site (downloads included, assets not)
    changed: list[str] = field(default_factory=list)  # files whose bytes are new or different
    unchanged: int = 0  # files identical to the previous build's
    removed: list[str] = field(default_factory=list)  # files of the previous build now gone


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


def write_site(
    items: Sequence[Page | PageSet],
    assets: dict[str, bytes],
    staging: Path,
    common: dict[str, Any],
    previous: Path,
    old_digests: dict[str, str],
    shared_digest: str,
    bytecode_dir: Path | None = None,
    old_sets: dict[str, tuple[str, list[str]]] | None = None,
    env: jinja2.Environment | None = None,
) -> tuple[WriteStats, dict[str, str], dict[str, tuple[str, list[str]]]]:
    """Write the pages and ``assets`` whose bytes differ from ``previous``'s into ``staging``.

    A :class:`PageSet` whose key digest equals the last build's (``old_sets``) is kept
    without being made. Returns (stats, new page digests, new page-set keys and paths); the
    stats list the changed and removed files :func:`commit_changes` applies.
    """
    env = env or environment(bytecode_dir)
    stats = WriteStats()
    digests: dict[str, str] = {}
    written: set[str] = set()
    before, stage = str(previous), str(staging)
    made: set[str] = set()  # folders created in staging

    def place(path: str, data: bytes) -> None:
        _place(stage, path, data, made)

    old_files = set(_files_under(previous))
    check = os.environ.get(CHECK_KEYS) == "1"
    sets: dict[str, tuple[str, list[str]]] = {}
    pages: list[Page] = []
    # A templated page of a remade set: its set's key changed, so its bytes almost always
    # did; it is rendered without a digest of its context, and recorded under the key.
    keyed: dict[str, str] = {}

    def unchanged(page: Page) -> bool:
        if page.template:
            old = os.path.join(before, page.path)
            return page.path in old_files and _same_bytes(old, page_bytes(page, env, common))
        return _page_digest(page, shared_digest) == old_digests.get(page.path)

    for item in items:
        if not isinstance(item, PageSet):
            pages.append(item)
            continue
        key = _inputs_digest(item.key, shared_digest)
        last = (old_sets or {}).get(item.name)
        reuse = (
            key is not None
            and last is not None
            and last[0] == key
            and all(p in old_digests and p in old_files for p in last[1])
        )
        if not reuse or check:
            fresh = item.make()
            if reuse and last is not None:
                stale = sorted(
                    {p.path for p in fresh} ^ set(last[1])
                    | {p.path for p in fresh if not unchanged(p)}
                )
                if stale:
                    raise StalePageKey(f"{item.name}: unchanged key, changed pages {stale}")
            if not reuse:
                pages.extend(fresh)
                if key is not None:
                    sets[item.name] = (key, sorted(p.path for p in fresh))
                    keyed.update((p.path, f"set {key}") for p in fresh if p.template)
                continue
        assert last is not None
        sets[item.name] = last
        stats.sets_reused += 1
        for path in last[1]:
            digests[path] = old_digests[path]
            stats.reused += 1
            stats.unchanged += 1
            written.add(path)
    stats.pages = len(written) + len(pages)
    for page in sorted(pages, key=lambda p: p.path):
        old = os.path.join(before, page.path) if page.path in old_files else None
        digest = keyed.get(page.path) or _page_digest(page, shared_digest)
        if digest is not None:
            digests[page.path] = digest
        if digest is not None and old is not None and old_digests.get(page.path) == digest:
            stats.reused += 1
            stats.unchanged += 1
            written.add(page.path)
            continue
        data = page_bytes(page, env, common)
        if page.template:
            stats.rendered += 1
        if old is not None and _same_bytes(old, data):
            stats.unchanged += 1
        else:
            place(page.path, data)
            stats.changed.append(page.path)
        written.add(page.path)
    for path, data in sorted(assets.items()):
        old = os.path.join(before, path) if path in old_files else None
        if old is None or not _same_bytes(old, data):
            place(path, data)
            stats.changed.append(path)
        written.add(path)
    stats.removed = sorted(old_files - written)
    return stats, digests, sets


def _files_under(folder: Path) -> list[str]:
    """Relative posix paths of every file under ``folder`` (none when it does not exist)."""
    out = []
    for here, _dirs, files in os.walk(folder):
        rel = Path(here).relative_to(folder).as_posix()
        prefix = "" if rel == "." else rel + "/"
        out += [prefix + f for f in files]
    return out


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
