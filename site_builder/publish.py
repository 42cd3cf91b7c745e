"""Publishing: copy the built site to a folder (a web root, a mounted bucket), changes only.

Publish keeps a record of the files it copied into the target
(:data:`~site_builder.targets.PUBLISH_RECORD`). ``delete`` removes only files on that record
that the site no longer has, as rsync's ``--delete`` removes only within what it transfers:
files someone else put in the target are never touched. A non-empty target without the
record is refused unless ``force`` names it, and ``/``, the home folder, the content, cache
and output folders (and their parents and sub-folders) always are.
"""

from __future__ import annotations

import contextlib
import os
import shutil
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from site_builder.render.writer import recover_output
from site_builder.targets import (
    OUTPUT_RECORD,
    PUBLISH_RECORD,
    NotBuiltError,
    UnsafeFolderError,
    check_location,
    entries,
    existing_files,
    held,
    inside,
    read_record,
    write_record,
)

#: The suffix of a file being copied into the target.
PARTIAL = ".publishing"


@dataclass
class PublishStats:
    copied: list[str] = field(default_factory=list)
    unchanged: int = 0
    deleted: list[str] = field(default_factory=list)
    stale: list[str] = field(default_factory=list)  # published before, gone from the site, kept


def _same(a: Path, b: Path) -> bool:
    return b.is_file() and a.stat().st_size == b.stat().st_size and a.read_bytes() == b.read_bytes()


def site_files(output: Path) -> list[str]:
    """The files of the built site in ``output``, as its build record lists them, after a
    half-finished build there is rolled back (so a half-updated site is never copied)."""
    recover_output(output)
    if not (output / "index.html").is_file():
        raise NotBuiltError(f"{output}/index.html not found; run `site-builder build` first.")
    files = read_record(output, OUTPUT_RECORD)
    if files is None:
        raise NotBuiltError(
            f"{output} has no {OUTPUT_RECORD} (it was built by an earlier version); "
            "run `site-builder build` first."
        )
    missing = sorted(set(files) - existing_files(output, files))
    if missing:
        raise NotBuiltError(
            f"{output} lacks {len(missing)} files of its site (e.g. {missing[0]}); "
            "run `site-builder build` again first."
        )
    return files


def publish(
    output: Path,
    target: Path,
    delete: bool = False,
    force: Path | None = None,
    protected: Mapping[str, Path] | None = None,
) -> PublishStats:
    """Make ``target`` hold the site built in ``output``: copy new and changed files, keep
    identical ones.

    Files published earlier that the site no longer has are deleted with ``delete``, else
    kept and listed as stale. Each file is copied to a temporary name and renamed, so a
    reader never sees half a file. ``force`` must name ``target`` to publish into a
    non-empty folder publish did not make, or over files it did not copy there;
    ``protected`` ({what: folder}) are folders the target must stay clear of.
    """
    guarded = {**(protected or {}), "output": output}
    real = check_location(target, "publish target", guarded)
    forced = force is not None and check_location(force, "publish target", guarded) == real
    if force is not None and not forced:
        raise UnsafeFolderError(f"--force {force} does not name the target {target}.")
    check_location(output, "output", {})
    with contextlib.ExitStack() as folders:  # no build changes either while it copies
        folders.enter_context(held(output, "output folder", make=False))
        files = site_files(output)
        folders.enter_context(held(target, "publish target"))
        return _copy(output, target, files, delete, forced)


def _copy(output: Path, target: Path, files: list[str], delete: bool, forced: bool) -> PublishStats:
    recorded = read_record(target, PUBLISH_RECORD)
    if recorded is None and entries(target) and not forced:
        raise UnsafeFolderError(
            f"refusing to publish into {target}: it is not empty and holds no "
            f"{PUBLISH_RECORD}, so publish did not make it. Publish into an empty or new "
            f"folder, or pass --force {target} to copy the site in anyway (files there that "
            "the site does not have are left alone, even with --delete)."
        )
    old = set(recorded or []) - {PUBLISH_RECORD}
    theirs = sorted(
        rel
        for rel in existing_files(target, [f for f in files if f not in old])
        if not _same(output / rel, target / rel)
    )
    if theirs and not forced:
        raise UnsafeFolderError(
            f"refusing to publish into {target}: {len(theirs)} files there that publish did "
            f"not copy would be overwritten (e.g. {theirs[0]}). Move them away, or pass "
            f"--force {target} to overwrite them."
        )
    target.mkdir(parents=True, exist_ok=True)
    # Recorded before copying: a publish stopped halfway still knows what it put there.
    write_record(target, PUBLISH_RECORD, old | set(files))
    for rel in sorted(old | set(files)):  # what a publish stopped while copying left
        if os.path.isfile(target / (rel + PARTIAL)) and inside(target, rel):
            (target / (rel + PARTIAL)).unlink()
    stats = PublishStats()
    for rel in files:
        src, dst = output / rel, target / rel
        if _same(src, dst):
            stats.unchanged += 1
            continue
        dst.parent.mkdir(parents=True, exist_ok=True)
        tmp = dst.with_name(dst.name + PARTIAL)
        shutil.copyfile(src, tmp)
        tmp.replace(dst)
        stats.copied.append(rel)
    gone = sorted(existing_files(target, old - set(files)))
    if delete:
        base = os.path.realpath(target)
        for rel in gone:
            if inside(target, rel, base):
                (target / rel).unlink()
                stats.deleted.append(rel)
                _prune(target, os.path.dirname(rel))
    else:
        stats.stale = gone
    write_record(target, PUBLISH_RECORD, set(files) | set(stats.stale))
    return stats


def _prune(target: Path, folder: str) -> None:
    """Delete ``folder`` and its parents inside ``target`` while they are empty (the folders
    that held deleted files, never any other)."""
    while folder:
        try:
            os.rmdir(target / folder)
        except OSError:
            return
        folder = os.path.dirname(folder)
