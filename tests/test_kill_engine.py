"""kill -9 of a real Stockfish during a build: the build finishes and the cache is complete."""

from __future__ import annotations

import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import diskcache
import psutil
import pytest

from tests.conftest import DATA, make_content, requires_engine

pytestmark = [requires_engine, pytest.mark.engine]


def _games(n: int) -> str:
    text = (DATA / "fixtures/pgn2tex-examples/WorldChamp1886.pgn").read_text(encoding="utf-8")
    parts = re.split(r"\n\s*\n(?=\[Event )", text.replace("\r\n", "\n"))
    return "\n\n".join(parts[:n]) + "\n"


def test_sigkill_of_an_engine_mid_build(tmp_path: Path) -> None:
    content = make_content(
        tmp_path,
        {"wc.pgn": _games(4)},
        "[analysis]\ndepth = 8\nmultipv = 3\nworkers = 2\nchunk_size = 25\n",
    )
    cache_dir = tmp_path / "cache"
    cmd = [
        sys.executable,
        "-m",
        "site_builder",
        "build",
        "--content",
        str(content),
        "--output",
        str(tmp_path / "out"),
        "--cache",
        str(cache_dir),
        "--no-progress",
    ]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    killed = None
    deadline = time.monotonic() + 60
    while killed is None and time.monotonic() < deadline and proc.poll() is None:
        engines = [
            c for c in psutil.Process(proc.pid).children(recursive=True) if "stockfish" in c.name()
        ]
        if len(engines) == 2 and cache_dir.exists():
            time.sleep(1.0)  # let the engines get into their searches
            engines[0].send_signal(signal.SIGKILL)
            killed = engines[0].pid
        time.sleep(0.05)
    out, _ = proc.communicate(timeout=300)
    assert killed is not None, "the build ended before an engine could be killed"
    assert proc.returncode == 0, out
    m = re.search(
        r"(\d+) positions needed, (\d+) reused from the last build, "
        r"(\d+) from the evaluation cache, (\d+) analysed",
        out,
    )
    assert m, out
    needed, reused, cached, analysed = map(int, m.groups())
    assert reused == 0 and cached + analysed == needed and "failed" not in out
    assert (tmp_path / "out" / "index.html").exists()
    with diskcache.Cache(str(cache_dir)) as cache:
        pv = [k for k in cache if k.startswith("pv|")]
    # Every position exactly once: keys are unique by construction, so count them.
    assert len(pv) == needed
    # A second build finds everything in the cache (into another folder: into the same one, it
    # sees that nothing changed before reading a game).
    other = [str(tmp_path / "out2") if c == str(tmp_path / "out") else c for c in cmd]
    again = subprocess.run(other, capture_output=True, text=True, timeout=300)
    assert f"{needed} reused from the last build, 0 from the evaluation cache, 0 analysed" in (
        again.stdout
    )


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_interrupted_build_resumes_from_the_cache(tmp_path: Path, sig: int) -> None:
    # Twelve games: enough work left after the 50th position for the signal to land mid-run,
    # even on a loaded machine.
    content = make_content(
        tmp_path,
        {"wc.pgn": _games(12)},
        "[analysis]\ndepth = 8\nmultipv = 3\nworkers = 2\nchunk_size = 25\n",
    )
    cache_dir = tmp_path / "cache"
    out_dir = tmp_path / "out"
    cmd = [
        sys.executable,
        "-m",
        "site_builder",
        "build",
        "--content",
        str(content),
        "--output",
        str(out_dir),
        "--cache",
        str(cache_dir),
        "--no-progress",
    ]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and proc.poll() is None:
        if cache_dir.exists():
            with diskcache.Cache(str(cache_dir)) as cache:
                if sum(1 for k in cache if k.startswith("pv|")) >= 50:
                    break
        time.sleep(0.1)
    assert proc.poll() is None, "the build ended before it could be interrupted"
    proc.send_signal(sig)
    out, _ = proc.communicate(timeout=60)
    assert proc.returncode == 130, out
    assert "Interrupted" in out
    assert not out_dir.exists()  # no half-written site
    children = [c for c in psutil.process_iter(["name", "ppid"]) if c.info["ppid"] == proc.pid]
    assert children == []
    again = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert again.returncode == 0, again.stdout + again.stderr
    m = re.search(
        r"(\d+) positions needed, (\d+) reused from the last build, "
        r"(\d+) from the evaluation cache, (\d+) analysed",
        again.stdout,
    )
    assert m, again.stdout
    needed, reused, cached, analysed = map(int, m.groups())
    assert reused == 0 and cached >= 50 and cached + analysed == needed
