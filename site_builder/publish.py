"""Publishing: copy the built site to a folder (a web root, a mounted bucket), changes only."""

from __future__ import annotations

import shutil
from dataclasses import dataclass, field
from pathlib import Path


@dataclass
class PublishStats:
    copied: list[str] = field(default_factory=list)
    unchanged: int = 0
    deleted: list[str] = field(default_factory=list)
    stale: list[str] = field(default_factory=list)  # in the target only, kept (no --delete)


def _same(a: Path, b: Path) -> bool:
    return b.is_file() and a.stat().st_size == b.stat().st_size and a.read_bytes() == b.read_bytes()


def publish(output: Path, target: Path, delete: bool = False) -> PublishStats:
    """Make ``target`` hold ``output``: copy new and changed files, keep identical ones.

    Files only in ``target`` are deleted with ``delete``, else listed as stale. Each file is
    copied to a temporary name and renamed, so a reader never sees half a file.
    """
    if not (output / "index.html").is_file():
        raise FileNotFoundError(f"{output}/index.html not found; run `site-builder build` first")
    stats = PublishStats()
    target.mkdir(parents=True, exist_ok=True)
    wanted = sorted(p.relative_to(output) for p in output.rglob("*") if p.is_file())
    for rel in wanted:
        src, dst = output / rel, target / rel
        if _same(src, dst):
            stats.unchanged += 1
            continue
        dst.parent.mkdir(parents=True, exist_ok=True)
        tmp = dst.with_name(dst.name + ".publishing")
        shutil.copyfile(src, tmp)
        tmp.replace(dst)
        stats.copied.append(rel.as_posix())
    keep = {rel.as_posix() for rel in wanted}
    for path in sorted(target.rglob("*")):
        name = path.relative_to(target).as_posix()
        if path.is_file() and name not in keep:
            if delete:
                path.unlink()
                stats.deleted.append(name)
            else:
                stats.stale.append(name)
    if delete:  # empty folders left behind
        for folder in sorted((p for p in target.rglob("*") if p.is_dir()), reverse=True):
            if not any(folder.iterdir()):
                folder.rmdir()
    return stats
