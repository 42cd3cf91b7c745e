"""The only render code that touches the disk: Jinja environment, assets, atomic output."""

from __future__ import annotations

import bisect
import contextlib
import errno
import functools
import hashlib
import io
import itertools
import json
import math
import os
import pickle
import shutil
from abc import abstractmethod
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, overload

import jinja2
from markupsafe import Markup

from site_builder.render.charts import to_script_json
from site_builder.targets import OUTPUT_RECORD, read_record, record_bytes

PACKAGE_DIR = Path(__file__).resolve().parent.parent


def templates_dir() -> Path:
    """``templates/`` beside the package (source checkout) or inside it (wheel)."""
    for candidate in (PACKAGE_DIR.parent / "templates", PACKAGE_DIR / "templates"):
        if candidate.is_dir():
            return candidate
    raise FileNotFoundError("templates/ not found beside or inside the site_builder package")


class Deferred:
    """A context value made only when its page is rendered.

    ``key`` holds everything ``make()`` depends on: the page digest reads the key instead of
    the value, so a page whose inputs are unchanged never makes it.
    """

    __slots__ = ("key", "make")

    def __init__(self, key: Any, make: Callable[[], Any]) -> None:
        self.key = key
        self.make = make

    def __reduce__(self) -> tuple[Any, ...]:
        # Pickled (for the page digest) as its inputs; never unpickled.
        return (Deferred, (self.key, None))


def fast_pickle(value: Any) -> bytes:
    """Pickle bytes that depend on the values only: no memo ("fast" mode), so which equal
    objects happen to be shared does not matter (a rebuild from the memo shares less)."""
    buffer = io.BytesIO()
    pickler = pickle.Pickler(buffer, protocol=5)
    pickler.fast = True
    pickler.dump(value)
    return buffer.getvalue()


class Digested:
    """A page input shared by several pages or keys (a table behind its CSV and JSON
    downloads, a game's row): pickled, for their digests, as the sha1 of its own pickle,
    computed once."""

    __slots__ = ("_sha", "value")

    def __init__(self, value: Any) -> None:
        self.value = value
        self._sha: str | None = None

    @classmethod
    def only_digest(cls, value: Any) -> Digested:
        """``value`` digested now, and not held."""
        found = cls(value)
        _ = found.sha
        found.value = None
        return found

    @property
    def sha(self) -> str:
        if self._sha is None:
            self._sha = hashlib.sha1(fast_pickle(self.value)).hexdigest()
        return self._sha

    def __reduce__(self) -> tuple[Any, ...]:
        return (Digested, (self.sha,))


@dataclass(frozen=True)
class PageSet:
    """The pages of one subject (a player, a game), made only when ``key`` differs from the
    last build's: ``key`` holds everything ``make()`` reads besides code, templates and settings,
    and is much cheaper to build than the pages. ``key`` may be a function making it: it is
    then made where the set is written (in a worker) and dropped once digested, so the
    build never holds every subject's key at once."""

    name: str
    #: None: no key, the set is made in every build (:func:`made_where_rendered`).
    key: Any
    make: Callable[[], list[Page]]
    #: Drops what the key and the pages shared, once the set is written or kept.
    release: Callable[[], None] | None = None

    def key_value(self) -> Any:
        return self.key() if callable(self.key) else self.key


def made_where_rendered(name: str, make: Callable[[], Sequence[Page]]) -> PageSet:
    """Pages made by the render process that writes them, in every build that writes the
    site (a set with no key): each page is then kept or rendered by its own digest, as if
    it had been made beforehand, but neither the build nor the other render processes
    hold it."""
    return PageSet(name, None, lambda: list(make()))


class _Items(Sequence["Page | PageSet"]):
    """A read-only sequence of items whose item ``i`` is :meth:`item` (``0 <= i < len``)."""

    @abstractmethod
    def item(self, index: int) -> Page | PageSet:
        """Item ``index`` (``0 <= index < len``), made when asked for."""

    @overload
    def __getitem__(self, index: int) -> Page | PageSet: ...
    @overload
    def __getitem__(self, index: slice) -> list[Page | PageSet]: ...
    def __getitem__(self, index: int | slice) -> Page | PageSet | list[Page | PageSet]:
        if isinstance(index, slice):
            return [self.item(i) for i in range(*index.indices(len(self)))]
        if index < 0:
            index += len(self)
        if not 0 <= index < len(self):
            raise IndexError(index)
        return self.item(index)


class MadeWhenRead(_Items):
    """Items made one at a time as they are read (``make(arg)`` for each of ``args``), so
    that a site's page sets (one per player, one per game) are not all held, with their
    closures, by the process that deals them out to the render's workers."""

    def __init__(self, args: Sequence[Any], make: Callable[[Any], Page | PageSet]) -> None:
        self.args = args
        self.make = make

    def __len__(self) -> int:
        return len(self.args)

    def item(self, index: int) -> Page | PageSet:
        return self.make(self.args[index])


class Chained(_Items):
    """Several sequences of items read as one, none copied."""

    def __init__(self, parts: Sequence[Sequence[Page | PageSet]]) -> None:
        self.parts = [part for part in parts if len(part)]
        self.ends = list(itertools.accumulate(len(part) for part in self.parts))

    def __len__(self) -> int:
        return self.ends[-1] if self.ends else 0

    def item(self, index: int) -> Page | PageSet:
        k = bisect.bisect_right(self.ends, index)
        return self.parts[k][index - (self.ends[k - 1] if k else 0)]


def expand(items: Sequence[Page | PageSet]) -> list[Page]:
    """Every page, page sets made."""
    out: list[Page] = []
    for item in items:
        out.extend(item.make() if isinstance(item, PageSet) else [item])
    return out


def resolved(context: dict[str, Any]) -> dict[str, Any]:
    """``context`` with its top-level :class:`Deferred` values made."""
    return {k: v.make() if isinstance(v, Deferred) else v for k, v in context.items()}


@dataclass(frozen=True)
class Page:
    """One output file: its path relative to the site root, template and context."""

    path: str
    template: str
    context: dict[str, Any] = field(default_factory=dict)


def fmt(value: Any, digits: int = 1, na: str = "n/a") -> str:
    """Numbers for tables: fixed digits; None and NaN show as ``n/a``."""
    if value is None:
        return na
    if isinstance(value, float):
        if math.isnan(value):
            return na
        return f"{value:.{digits}f}"
    try:
        import pandas as pd

        if value is pd.NA:
            return na
    except ImportError:  # pragma: no cover
        pass
    return str(value)


def pct(value: Any, digits: int = 1) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "n/a"
    return f"{100 * float(value):.{digits}f}%"


def chart_json(fig: dict[str, Any]) -> Markup:
    return Markup(to_script_json(fig))


class SiteEnvironment(jinja2.Environment):
    """Page rows are plain dicts: ``row.key`` looks the key up first (Jinja tries the
    attribute first and pays for an exception on every cell of a table)."""

    def getattr(self, obj: Any, attribute: str) -> Any:
        if type(obj) is dict:
            try:
                return obj[attribute]
            except KeyError:
                pass
        return super().getattr(obj, attribute)


def environment(bytecode_dir: Path | None = None) -> jinja2.Environment:
    """The site's Jinja environment; with ``bytecode_dir``, compiled templates are kept there
    between builds (Jinja's own bytecode cache, checked against each template's source)."""
    cache = None
    if bytecode_dir is not None:
        bytecode_dir.mkdir(parents=True, exist_ok=True)
        cache = jinja2.FileSystemBytecodeCache(str(bytecode_dir))
    env = SiteEnvironment(
        loader=jinja2.FileSystemLoader(str(templates_dir())),
        bytecode_cache=cache,
        auto_reload=False,  # one build reads each template once (their digest is taken first)
        autoescape=True,  # every string from a PGN is untrusted
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
    )
    env.filters["fmt"] = fmt
    env.filters["pct"] = pct
    env.filters["chart_json"] = chart_json
    return env


@functools.cache
def _fragment_environment() -> jinja2.Environment:
    return environment()


def render_fragment(
    template: str, context: dict[str, Any], env: jinja2.Environment | None = None
) -> Markup:
    """A part of a page rendered on its own (``template`` uses only ``context``), to be
    inserted into the page as it is; with ``env``, the build's environment (its templates
    compiled once for the pages and their parts)."""
    return Markup((env or _fragment_environment()).get_template(template).render(context))


def root_for(path: str) -> str:
    depth = path.count("/")
    return "../" * depth


def page_bytes(page: Page, env: jinja2.Environment, common: dict[str, Any]) -> bytes:
    """The bytes of one page: its template rendered, or the download made by its builder."""
    own = resolved(page.context)
    if not page.template:
        data: bytes = own["bytes"]
        return data
    context = {**common, **own, "root": root_for(page.path), "page_path": page.path}
    return env.get_template(page.template).render(context).encode("utf-8")


def render_pages(
    pages: Sequence[Page | PageSet], staging: Path, common: dict[str, Any]
) -> dict[str, bytes]:
    """Render every page into ``staging``; returns {path: bytes}."""
    env = environment()
    out: dict[str, bytes] = {}
    for page in sorted(expand(pages), key=lambda p: p.path):
        data = page_bytes(page, env, common)
        target = staging / page.path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
        out[page.path] = data
    return out


def write_file(staging: Path, path: str, data: bytes) -> None:
    target = staging / path
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(data)


#: The build's working folder inside the output folder: staging, journal and backup live on
#: the output's own file system, so every move is a rename (a mounted --output included).
WORK = ".site-builder-work"
#: The suffix of a file being copied where a rename crossed file systems.
COPYING = ".site-builder-copying"


def work_dir(output: Path) -> Path:
    return output / WORK


def staging_dir(output: Path) -> Path:
    """An empty staging folder inside ``output`` (made, with ``output``, when missing)."""
    staging = work_dir(output) / "staging"
    if staging.exists():
        shutil.rmtree(staging)
    staging.mkdir(parents=True)
    return staging


def _move(src: str, dst: str) -> None:
    """Rename ``src`` to ``dst``; across file systems (EXDEV), copy to a temporary name beside
    ``dst``, rename that over ``dst``, then delete ``src``: a reader never sees half a file,
    and the journal's rollback finds ``src`` or ``dst`` whole at every step."""
    try:
        os.replace(src, dst)
    except OSError as exc:
        if exc.errno != errno.EXDEV:
            raise
        tmp = dst + COPYING
        shutil.copyfile(src, tmp)
        shutil.copystat(src, tmp)
        os.replace(tmp, dst)
        os.unlink(src)


def commit_changes(
    staging: Path,
    output: Path,
    changed: Sequence[str],
    removed: Sequence[str],
    files: Collection[str] | None = None,
) -> bool:
    """Move the ``changed`` files from ``staging`` into ``output`` and delete ``removed``.

    ``output`` gets the build's record (:data:`~site_builder.targets.OUTPUT_RECORD`) listing
    ``files``, every file of the new site (by default: the last record's, less ``removed``,
    plus ``changed``); the next build replaces and removes only files on it. A journal lists
    the moves and every replaced or removed file is kept in a backup folder until the
    journal is deleted, so :func:`recover_output` can roll a build killed halfway back to
    the previous site. Unchanged files are not touched. Returns whether the record changed.
    """
    output.mkdir(parents=True, exist_ok=True)
    if files is None:
        gone = set(removed)
        files = {f for f in read_record(output, OUTPUT_RECORD) or [] if f not in gone}
        files |= set(changed)
    record = record_bytes(files)
    changed = list(changed)
    try:
        same = (output / OUTPUT_RECORD).read_bytes() == record
    except OSError:
        same = False
    if not same:
        (staging / OUTPUT_RECORD).write_bytes(record)
        changed.append(OUTPUT_RECORD)
    work = work_dir(output)
    work.mkdir(exist_ok=True)
    journal, backup = work / "journal", work / "backup"
    if backup.exists():
        shutil.rmtree(backup)
    out, back, stage = str(output), str(backup), str(staging)
    new = [p for p in changed if not os.path.lexists(os.path.join(out, p))]
    fresh = set(new)
    replaced = [p for p in changed if p not in fresh]
    tmp = journal.with_name(journal.name + ".tmp")
    tmp.write_text(json.dumps({"new": new, "replaced": replaced, "removed": list(removed)}))
    os.replace(tmp, journal)
    made: set[str] = set()

    def move(src: str, dst: str) -> None:
        folder = os.path.dirname(dst)
        if folder not in made:
            os.makedirs(folder, exist_ok=True)
            made.add(folder)
        _move(src, dst)

    for p in changed:
        if p not in fresh:
            move(os.path.join(out, p), os.path.join(back, p))
        move(os.path.join(stage, p), os.path.join(out, p))
    for p in removed:
        move(os.path.join(out, p), os.path.join(back, p))
    for folder in sorted({os.path.dirname(p) for p in removed}, key=len, reverse=True):
        _prune(output, folder)
    journal.unlink()  # the commit point: from here on the new site stands
    shutil.rmtree(backup, ignore_errors=True)
    shutil.rmtree(staging, ignore_errors=True)
    with contextlib.suppress(OSError):
        work.rmdir()  # gone unless it holds something else
    return not same


def _prune(output: Path, folder: str) -> None:
    """Delete ``folder`` and its parents inside ``output`` while they are empty."""
    while folder:
        try:
            os.rmdir(output / folder)
        except OSError:  # not empty (or gone)
            return
        folder = os.path.dirname(folder)


def _roll_back(output: Path, journal: Path, backup: Path) -> None:
    """Undo the moves ``journal`` lists: new files go, replaced and removed ones come back
    from ``backup``. Only paths on the journal are touched."""
    if journal.exists():
        moves = json.loads(journal.read_text())
        for p in moves["new"]:
            for name in (p, p + COPYING):
                if os.path.lexists(output / name):
                    os.unlink(output / name)
        for p in [*moves["replaced"], *moves["removed"]]:
            (output / (p + COPYING)).unlink(missing_ok=True)
            (backup / (p + COPYING)).unlink(missing_ok=True)
            if (backup / p).exists():
                (output / p).parent.mkdir(parents=True, exist_ok=True)
                _move(str(backup / p), str(output / p))
        for folder in sorted({os.path.dirname(p) for p in moves["new"]}, key=len, reverse=True):
            _prune(output, folder)
        journal.unlink()
    journal.with_name(journal.name + ".tmp").unlink(missing_ok=True)
    if backup.exists():
        shutil.rmtree(backup)


def recover_output(output: Path) -> None:
    """Put the previous site back after a build killed while it changed ``output``, and
    delete what a failed build left: its staging, journal and backup folders (inside
    ``output``, and beside it where earlier versions kept them)."""
    work = work_dir(output)
    if work.is_dir():
        _roll_back(output, work / "journal", work / "backup")
        shutil.rmtree(work / "staging", ignore_errors=True)
        with contextlib.suppress(OSError):
            work.rmdir()
    if not output.name:  # "/" has no siblings of ours
        return
    old = output.with_name(output.name + ".old")
    if old.is_dir():
        if output.exists():  # killed after a first swap, before the old site was deleted
            shutil.rmtree(old)
        else:  # killed between the two renames of a first swap
            os.replace(old, output)
    _roll_back(
        output,
        output.with_name(output.name + ".journal"),
        output.with_name(output.name + ".backup"),
    )
    staging = output.with_name(output.name + ".staging")
    if staging.is_dir():
        shutil.rmtree(staging)
