"""A build killed with SIGKILL while it renders leaves the previous site as it was; the next
build recovers and equals a build from scratch. A build stopped while it moves its changed
files into place is rolled back to the previous site."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import IO

import pytest

from site_builder.render.output import write_site
from site_builder.render.writer import WORK, Page, commit_changes, recover_output, staging_dir
from site_builder.targets import OUTPUT_RECORD, read_record
from tests.conftest import DATA, requires_engine
from tests.test_incremental import _tree

#: Each build's stderr, in a file: a pipe read only at the end would fill and stop a build
#: that writes much (a traceback from every worker).
_LOGS: dict[int, IO[bytes]] = {}


def _errors(proc: subprocess.Popen[bytes]) -> str:
    log = _LOGS[proc.pid]
    log.seek(0)
    return log.read().decode(errors="replace")


def _build(content: Path, out: Path, cache: Path) -> subprocess.Popen[bytes]:
    log = tempfile.TemporaryFile()  # noqa: SIM115 (open while the build runs)
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "site_builder",
            "build",
            "--content",
            str(content),
            "--output",
            str(out),
            "--cache",
            str(cache),
            "--no-progress",
        ],
        stdout=subprocess.DEVNULL,
        stderr=log,
    )
    _LOGS[proc.pid] = log
    return proc


def built_then_renamed(tmp_path: Path) -> tuple[Path, Path, Path, dict[str, bytes]]:
    """The small site built into ``tmp_path/output``, then its title changed, so the next
    build renders every page again: the content, output and cache folders and the site."""
    content = tmp_path / "content"
    shutil.copytree(DATA / "small-site", content)
    out, cache = tmp_path / "output", tmp_path / "cache"
    first = _build(content, out, cache)
    assert first.wait(timeout=900) == 0, _errors(first)
    assert not (out / WORK).exists()
    toml = content / "site.toml"
    toml.write_text(toml.read_text().replace('title = "', 'title = "Renamed: ', 1))
    return content, out, cache, _tree(out)


def in_render(proc: subprocess.Popen[bytes], out: Path, pages: int) -> bool:
    """Whether the build ``proc`` reached its render (more than ``pages`` game pages in its
    staging folder) while still running; polled every 5 ms."""
    games = out / WORK / "staging" / "games"
    deadline = time.monotonic() + 900
    while proc.poll() is None and time.monotonic() < deadline:
        if games.is_dir() and len(list(games.glob("*.html"))) > pages:
            return True
        time.sleep(0.005)
    return False


@requires_engine
def test_kill_during_render_leaves_the_previous_site(tmp_path: Path) -> None:
    content, out, cache, previous = built_then_renamed(tmp_path)
    second = _build(content, out, cache)
    if in_render(second, out, 20):  # some pages staged: kill it
        workers = _children(second.pid)
        os.kill(second.pid, signal.SIGKILL)
    assert second.wait(timeout=60) == -signal.SIGKILL, "the build ended before the render"
    assert _outside_work(_tree(out)) == previous  # the site; staging stays till the next build
    # The render workers (on a machine with more than one core) die with the build.
    wait_until = time.monotonic() + 30
    while any(_alive(pid) for pid in workers) and time.monotonic() < wait_until:
        time.sleep(0.05)
    assert not [pid for pid in workers if _alive(pid)], "a render worker outlived the build"

    third = _build(content, out, cache)
    assert third.wait(timeout=900) == 0
    assert not (out / WORK).exists()
    after = _tree(out)
    assert after != previous and "Renamed: " in (out / "index.html").read_text()
    scratch = tmp_path / "scratch"
    fresh = _build(content, scratch, tmp_path / "cache-2")
    assert fresh.wait(timeout=900) == 0
    assert _tree(scratch) == after


def _children(pid: int) -> list[int]:
    """The processes whose parent is ``pid`` (Linux /proc)."""
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:  # ended meanwhile
            continue
        if int(fields[1]) == pid:
            found.append(int(stat.parent.name))
    return found


def _alive(pid: int) -> bool:
    """Running (a zombie left for init to reap counts as ended)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def _outside_work(tree: dict[str, bytes]) -> dict[str, bytes]:
    return {k: v for k, v in tree.items() if not k.startswith(WORK + "/")}


def _site(pages: dict[str, str], out: Path) -> None:
    staging = staging_dir(out)  # as a build does
    items = [Page(path, "", {"bytes": text.encode()}) for path, text in pages.items()]
    stats = write_site(items, {}, staging, {}, out, {}, "shared")[0]
    commit_changes(staging, out, stats.changed, stats.removed, stats.files)


def _pages(out: Path) -> dict[str, bytes]:
    """The site's files in ``out``, which must be exactly those on its record."""
    tree = _tree(out)
    del tree[OUTPUT_RECORD]
    assert read_record(out, OUTPUT_RECORD) == sorted(tree)
    return tree


def _dirs(root: Path) -> list[str]:
    return sorted(p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_dir())


FIRST = {"index.html": "home", "players/a.html": "A", "players/b.html": "B", "gone/x.csv": "x"}
SECOND = {"index.html": "home 2", "players/a.html": "A", "players/c.html": "C", "new/y.csv": "y"}


def test_only_changed_files_move_and_emptied_folders_go(tmp_path: Path) -> None:
    out = tmp_path / "output"
    _site(FIRST, out)
    kept = (out / "players/a.html").stat().st_ino
    _site(SECOND, out)
    assert _pages(out) == {k: v.encode() for k, v in SECOND.items()}
    assert _dirs(out) == ["new", "players"]  # no staging, journal or backup left
    assert (out / "players/a.html").stat().st_ino == kept  # not touched
    assert sorted(p.name for p in tmp_path.iterdir()) == ["output"]


@pytest.mark.parametrize("stop_after", range(8))  # the second site and its record: 8 moves
def test_a_commit_stopped_halfway_is_rolled_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, stop_after: int
) -> None:
    out = tmp_path / "output"
    _site(FIRST, out)
    previous, folders = _tree(out), _dirs(out)
    moves = 0
    replace = os.replace

    def stopping(src: object, dst: object) -> None:
        nonlocal moves
        # the first rename writes the journal; the moves follow
        if moves == stop_after + 1:
            raise KeyboardInterrupt("killed")
        moves += 1
        replace(src, dst)  # type: ignore[arg-type]

    monkeypatch.setattr(os, "replace", stopping)
    with pytest.raises(KeyboardInterrupt):
        _site(SECOND, out)
    monkeypatch.setattr(os, "replace", replace)
    recover_output(out)
    assert _tree(out) == previous and _dirs(out) == folders
    # the next build starts from the previous site and ends as if nothing had happened
    _site(SECOND, out)
    assert _pages(out) == {k: v.encode() for k, v in SECOND.items()}


def test_recovery_after_a_first_swap_killed_at_either_rename(tmp_path: Path) -> None:
    out, old = tmp_path / "output", tmp_path / "output.old"
    old.mkdir()
    (old / "index.html").write_text("previous")
    recover_output(out)  # killed between the renames: the previous site comes back
    assert (out / "index.html").read_text() == "previous" and not old.exists()
    old.mkdir()
    (old / "index.html").write_text("older")
    recover_output(out)  # killed before the old site was deleted: it goes
    assert (out / "index.html").read_text() == "previous" and not old.exists()
