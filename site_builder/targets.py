"""Which folders the build may write and publish may copy into, and the records that say what
they wrote there.

A build writes the site into its output folder and leaves a record in it,
:data:`OUTPUT_RECORD`: the sorted list of every file it wrote. Publish leaves its own record,
:data:`PUBLISH_RECORD`, in the target. Removal only ever touches files on such a record
(rsync's ``--delete`` within what it manages); a folder that holds the content or the cache,
``/`` and the home folder are refused outright (Pelican refuses to clean an output folder
that holds its content), and so is a non-empty folder without the record.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Collection, Iterable, Iterator, Mapping
from pathlib import Path

try:
    import fcntl
except ImportError:  # not POSIX: no lock
    fcntl = None  # type: ignore[assignment]

from site_builder import __version__
from site_builder.errors import SiteBuilderError

#: The build's record in the output folder: the files of the site (every file but itself).
OUTPUT_RECORD = "site-builder.json"
#: Publish's record in the target folder: the files it copied there.
PUBLISH_RECORD = ".site-builder-publish.json"
TOOL = "site-builder"


class UnsafeFolderError(SiteBuilderError, ValueError):
    """A folder the build or publish must not write into; the message names it and why."""


class FolderInUseError(SiteBuilderError, RuntimeError):
    """Another site-builder command holds the folder (see :func:`held`)."""


@contextlib.contextmanager
def held(folder: Path, role: str, make: bool = True) -> Iterator[None]:
    """``folder`` held by this command alone while it runs: an advisory lock (``flock``) on
    the folder itself, so nothing is written into it and the lock goes with the process
    however it ends. A second command on the same folder stops at once, before it touches
    anything: otherwise its recovery would take the first one's staging and journal for a
    killed build's, and delete or undo them.

    A missing folder is made (with its missing parents), and removed again at the end if
    the command left it empty (a build that failed before writing leaves nothing); with
    ``make`` False it is not held."""
    if fcntl is None or not (make or folder.is_dir()):
        yield
        return
    made = [p for p in (folder, *folder.parents) if not p.exists()]
    folder.mkdir(parents=True, exist_ok=True)
    fd = os.open(folder, os.O_RDONLY)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            made = []  # the holder's now
            raise FolderInUseError(
                f"the {role} {folder} is in use by another site-builder command still "
                "running (a build, analysis, calibration, publish or salvage); wait for it to end, "
                "or stop it, then run this one again."
            ) from None
        except OSError:  # a file system without locks (ENOLCK, EOPNOTSUPP): unlocked, as before
            pass
        yield
    finally:
        for path in made:  # innermost first; a folder holding anything stays
            try:
                path.rmdir()
            except OSError:
                break
        os.close(fd)


class NotBuiltError(SiteBuilderError, FileNotFoundError):
    """No built site in the output folder."""


def _real(path: Path) -> Path:
    return Path(os.path.realpath(path.expanduser()))


def _home() -> Path | None:
    try:
        return _real(Path.home())
    except RuntimeError:  # no home folder known
        return None


def check_location(folder: Path, role: str, protected: Mapping[str, Path]) -> Path:
    """``folder`` resolved, or :class:`UnsafeFolderError` when it is ``/``, the home folder or
    one of its parents, or one of the ``protected`` folders ({what: path}), a folder inside
    one, or a parent of one. ``role`` says what the folder is for ("output", "publish target").
    """
    real = _real(folder)
    if real == Path(real.anchor):
        raise UnsafeFolderError(
            f"refusing to use {real} as the {role} folder: it is the root of the file system. "
            "Name a folder of its own."
        )
    home = _home()
    if home is not None and (real == home or real in home.parents):
        raise UnsafeFolderError(
            f"refusing to use {real} as the {role} folder: it is "
            + ("your home folder" if real == home else f"a parent of your home folder {home}")
            + ". Name a folder of its own."
        )
    for what, other in protected.items():
        there = _real(other)
        if real == there:
            relation = f"is the {what} folder"
        elif there in real.parents:
            relation = f"is inside the {what} folder {there}"
        elif real in there.parents:
            relation = f"holds the {what} folder {there}"
        else:
            continue
        raise UnsafeFolderError(
            f"refusing to use {real} as the {role} folder: it {relation}, whose files it could "
            "overwrite or delete. Name a folder of its own, outside the content, cache and "
            "output folders."
        )
    return real


def safe_relative(name: object) -> str | None:
    """``name`` when it is a plain relative path inside a folder ("a/b.html"), else None."""
    if not isinstance(name, str) or not name or "\\" in name or "\0" in name:
        return None
    if name.startswith("/") or any(part in ("", ".", "..") for part in name.split("/")):
        return None
    return name


def record_bytes(files: Iterable[str]) -> bytes:
    """A record's bytes: sorted, no time stamp, so the site stays byte-reproducible."""
    data = {"tool": TOOL, "version": __version__, "files": sorted(set(files))}
    return (json.dumps(data, indent=0, sort_keys=True) + "\n").encode()


def read_record(folder: Path, name: str) -> list[str] | None:
    """The files listed in ``folder/name``, or None without a valid record there. A listed
    path that would lead out of the folder is dropped."""
    try:
        data = json.loads((folder / name).read_bytes())
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict) or data.get("tool") != TOOL:
        return None
    files = data.get("files")
    if not isinstance(files, list):
        return None
    return sorted({f for f in map(safe_relative, files) if f is not None})


def write_record(folder: Path, name: str, files: Iterable[str]) -> None:
    """Write a record atomically (a temporary file renamed over it)."""
    tmp = folder / (name + ".tmp")
    tmp.write_bytes(record_bytes(files))
    os.replace(tmp, folder / name)


def inside(folder: Path, rel: str, real_folder: str | None = None) -> bool:
    """``folder/rel``'s parent folder, links followed, is ``folder`` or inside it: a folder
    replaced by a link to elsewhere is not followed when deleting."""
    base = real_folder or os.path.realpath(folder)
    parent = os.path.realpath(os.path.join(folder, os.path.dirname(rel)))
    return parent == base or parent.startswith(base + os.sep)


def existing_files(folder: Path, names: Collection[str]) -> set[str]:
    """The ``names`` that are files in ``folder`` (reached without leaving it). Each
    subfolder is resolved and listed once, not each name (an output holds 10^5 files)."""
    base = os.path.realpath(folder)
    by_parent: dict[str, list[str]] = {}
    for n in names:
        by_parent.setdefault(os.path.dirname(n), []).append(n)
    out: set[str] = set()
    for parent, group in by_parent.items():
        if not inside(folder, group[0], base):
            continue
        try:
            with os.scandir(os.path.join(folder, parent)) as found:
                present = {e.name for e in found if e.is_file()}  # links followed, as isfile
        except OSError:
            continue
        out.update(n for n in group if os.path.basename(n) in present)
    return out


def recorded_site(output: Path, work: str) -> set[str] | None:
    """The files of the previous build in ``output`` that its record lists and that are
    still there (never the record itself or the build's ``work`` folder); None without a
    record."""
    recorded = read_record(output, OUTPUT_RECORD)
    if recorded is None:
        return None
    own = [f for f in recorded if f != OUTPUT_RECORD and f.split("/", 1)[0] != work]
    return existing_files(output, own)


def entries(folder: Path, ignore: Collection[str] = ()) -> list[str]:
    """The names in ``folder`` but ``ignore`` (none when it does not exist)."""
    try:
        return sorted(n for n in os.listdir(folder) if n not in ignore)
    except FileNotFoundError:
        return []
    except NotADirectoryError:
        raise UnsafeFolderError(f"{folder} is a file, not a folder.") from None


def files_under(folder: Path) -> list[str]:
    """Relative posix paths of every file under ``folder``."""
    out = []
    for here, _dirs, files in os.walk(folder):
        rel = Path(here).relative_to(folder).as_posix()
        prefix = "" if rel == "." else rel + "/"
        out += [prefix + f for f in files]
    return sorted(out)


def output_record(
    output: Path, work: str, legacy: Collection[str] | None = None, show: int = 5
) -> set[str]:
    """The files of the previous build in ``output`` that a new build may replace or remove.

    ``output`` is the tool's when it holds :data:`OUTPUT_RECORD`, is missing or empty (besides
    the build's own ``work`` folder). An output folder of an earlier version (no record) is
    adopted when every file in it is one ``legacy`` (that build's pages and assets, from the
    build cache) lists. Anything else is refused before a file is touched.
    """
    recorded = recorded_site(output, work)
    if recorded is not None:
        return recorded
    if not entries(output, {work}):
        return set()
    present = [f for f in files_under(output) if not f.startswith(work + "/")]
    foreign = [f for f in present if legacy is None or f not in legacy]
    if legacy and (output / "index.html").is_file() and not foreign:
        return set(present)
    listed = ", ".join(foreign[:show]) + (
        f" and {len(foreign) - show} more" if len(foreign) > show else ""
    )
    raise UnsafeFolderError(
        f"refusing to build into {output}: it is not empty and was not made by site-builder "
        f"(no {OUTPUT_RECORD} in it; files such as {listed}). The build deletes stale pages, "
        "so it only writes into an empty folder or one it made. Move those files away, or "
        "choose another --output folder."
    )
