"""A build killed with SIGKILL while it renders leaves the previous site as it was; the next
build recovers and equals a build from scratch."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

from tests.conftest import DATA, requires_engine
from tests.test_incremental import _tree


def _build(content: Path, out: Path, cache: Path) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
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
        stderr=subprocess.PIPE,
    )


@requires_engine
def test_kill_during_render_leaves_the_previous_site(tmp_path: Path) -> None:
    content = tmp_path / "content"
    shutil.copytree(DATA / "small-site", content)
    out, cache = tmp_path / "output", tmp_path / "cache"
    first = _build(content, out, cache)
    assert first.wait(timeout=900) == 0, first.stderr.read() if first.stderr else ""
    previous = _tree(out)

    # A new site title changes every page: the next build re-renders all of them.
    toml = content / "site.toml"
    toml.write_text(toml.read_text().replace('title = "', 'title = "Renamed: ', 1))
    staging = out.with_name(out.name + ".staging")
    second = _build(content, out, cache)
    deadline = time.monotonic() + 900
    while second.poll() is None and time.monotonic() < deadline:
        # Kill once the render phase has written some pages into the staging folder.
        if staging.is_dir() and len(list((staging / "games").glob("*.html"))) > 20:
            os.kill(second.pid, signal.SIGKILL)
            break
        time.sleep(0.01)
    assert second.wait(timeout=60) == -signal.SIGKILL, "the build ended before the render"
    assert _tree(out) == previous

    third = _build(content, out, cache)
    assert third.wait(timeout=900) == 0
    assert not staging.exists()
    after = _tree(out)
    assert after != previous and "Renamed: " in (out / "index.html").read_text()
    scratch = tmp_path / "scratch"
    fresh = _build(content, scratch, tmp_path / "cache-2")
    assert fresh.wait(timeout=900) == 0
    assert _tree(scratch) == after
