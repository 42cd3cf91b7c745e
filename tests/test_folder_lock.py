"""One command at a time on an output folder and a build cache: a second build, analysis,
calibration or publish started while a build runs stops at once with a message and touches
nothing. Before the lock, its recovery took the running build's staging and journal for a
killed build's and deleted or undid them."""

from __future__ import annotations

import contextlib
import errno
import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from site_builder.analysis.stage import build_cache_dir
from site_builder.cli import main
from site_builder.commands import recover_unless_building
from site_builder.render.writer import WORK
from site_builder.targets import OUTPUT_RECORD, FolderInUseError, held
from tests.conftest import requires_engine
from tests.test_atomic_output import _build, _children, _errors, built_then_renamed, in_render
from tests.test_incremental import _tree

fcntl = pytest.importorskip("fcntl", reason="flock is POSIX")


def _run(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "site_builder", *argv],
        capture_output=True,
        text=True,
        timeout=120,
    )


def _stopped_in_render(content: Path, out: Path, cache: Path) -> subprocess.Popen[bytes]:
    """A real build, stopped (SIGSTOP, with its workers) once it has staged some pages."""
    proc = _build(content, out, cache)
    assert in_render(proc, out, 5), f"the build ended before its render: {_errors(proc)}"
    _signal_all(proc, signal.SIGSTOP)
    return proc


def _signal_all(proc: subprocess.Popen[bytes], sig: signal.Signals) -> None:
    for pid in [*_children(proc.pid), proc.pid]:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, sig)


@requires_engine
def test_a_second_command_while_a_build_runs_stops_and_touches_nothing(tmp_path: Path) -> None:
    content, out, cache, previous = built_then_renamed(tmp_path)
    running = _stopped_in_render(content, out, cache)
    try:
        staged = _tree(out / WORK)
        # The same output with another cache, the same cache with another output, a publish
        # of the output and an analysis on the cache: each refused at once, naming what.
        other = _run("build", "--content", str(content), "--output", str(out),
                     "--cache", str(tmp_path / "cache-2"), "--no-progress")  # fmt: skip
        assert other.returncode == 2
        assert f"the output folder {out} is in use by another site-builder" in other.stderr
        beside = _run("build", "--content", str(content), "--output", str(tmp_path / "out-2"),
                      "--cache", str(cache), "--no-progress")  # fmt: skip
        assert beside.returncode == 2
        assert f"the build cache {build_cache_dir(cache)} is in use" in beside.stderr
        published = _run("publish", "--output", str(out), "--to", str(tmp_path / "www"))
        assert published.returncode == 2 and "is in use" in published.stderr
        analysed = _run("analyse", "--content", str(content), "--cache", str(cache),
                        "--no-progress")  # fmt: skip
        assert analysed.returncode == 2 and "is in use" in analysed.stderr
        calibrated = _run("calibrate", "--content", str(content), "--output", str(out),
                          "--cache", str(cache), "--no-progress")  # fmt: skip
        assert calibrated.returncode == 2 and "is in use" in calibrated.stderr
        said = [other, beside, published, analysed, calibrated]
        assert not [r.stderr for r in said if "Traceback" in r.stderr]
        # A server started meanwhile serves and leaves the running build's work alone.
        recover_unless_building(out)
        assert _tree(out / WORK) == staged
        assert _tree(out) == {**previous, **{f"{WORK}/{k}": v for k, v in staged.items()}}
        assert not [p.name for p in tmp_path.iterdir() if p.name in {"www", "cache-2", "out-2"}]
    except BaseException:
        _signal_all(running, signal.SIGKILL)  # stopped or not, none of it outlives the test
        running.wait(timeout=60)
        raise
    _signal_all(running, signal.SIGCONT)
    assert running.wait(timeout=900) == 0, _errors(running)
    assert not (out / WORK).exists()
    assert "Renamed: " in (out / "index.html").read_text()
    assert json.loads((out / OUTPUT_RECORD).read_text())  # the record, whole
    # Once it has ended, the folders are free again.
    again = _run("publish", "--output", str(out), "--to", str(tmp_path / "www"))
    assert again.returncode == 0, again.stderr


def test_the_lock_goes_with_a_killed_holder(tmp_path: Path) -> None:
    out = tmp_path / "output"
    out.mkdir()
    holder = subprocess.Popen(
        [sys.executable, "-c",
         "import sys, time; from pathlib import Path; from site_builder.targets import held\n"
         "with held(Path(sys.argv[1]), 'output folder'):\n"
         "    print('held', flush=True); time.sleep(600)", str(out)],
        stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "held\n"
        with (
            pytest.raises(FolderInUseError, match=r"the output folder .* is in use"),
            held(out, "output folder"),
        ):
            pass
    finally:
        holder.kill()
        holder.wait(timeout=30)
    with held(out, "output folder"):  # a killed build's lock does not outlive it
        pass


def test_held_makes_a_missing_folder_and_removes_it_when_left_empty(tmp_path: Path) -> None:
    site = tmp_path / "sites" / "site"
    with held(site, "output folder", make=False):
        assert not (tmp_path / "sites").exists()
    with held(site, "output folder"):
        assert site.is_dir()
        with pytest.raises(FolderInUseError), held(site, "output folder"):
            pass  # another open of the folder is another holder; it removes nothing
        assert site.is_dir()
    assert sorted(tmp_path.iterdir()) == []  # a command that wrote nothing leaves nothing
    with held(site, "output folder"):
        (site / "index.html").write_text("made")
    assert (site / "index.html").read_text() == "made"  # nothing written in it by the lock
    assert sorted(p.name for p in site.iterdir()) == ["index.html"]
    (tmp_path / "theirs").mkdir()
    with held(tmp_path / "theirs", "output folder"):
        pass
    assert (tmp_path / "theirs").is_dir()  # not made by it: stays, empty or not


def test_a_file_system_without_locks_still_builds(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def refused(fd: int, operation: int) -> None:
        raise OSError(errno.ENOLCK, "No locks available")

    monkeypatch.setattr(fcntl, "flock", refused)
    with held(tmp_path / "site", "output folder"), held(tmp_path / "site", "output folder"):
        (tmp_path / "site" / "index.html").write_text("made")  # unlocked, as before the lock
    assert (tmp_path / "site" / "index.html").is_file()


def test_a_killed_build_is_still_rolled_back_when_no_build_runs(tmp_path: Path) -> None:
    out = tmp_path / "output"
    (out / WORK / "staging").mkdir(parents=True)
    (out / WORK / "staging" / "index.html").write_text("half")
    (out / "index.html").write_text("new")
    (out / WORK / "backup").mkdir()
    (out / WORK / "backup" / "index.html").write_text("old")
    journal = {"new": [], "replaced": ["index.html"], "removed": []}
    (out / WORK / "journal").write_text(json.dumps(journal))
    with held(out, "output folder"):  # a build still running: left alone
        recover_unless_building(out)
        assert (out / "index.html").read_text() == "new"
        assert (out / WORK / "journal").is_file()
    recover_unless_building(out)  # a killed one: undone
    assert (out / "index.html").read_text() == "old"
    assert not (out / WORK).exists()


def test_salvage_waits_for_no_build(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cache = tmp_path / "cache"
    cache.mkdir()
    (cache / "cache.db").write_bytes(b"not a database")
    with held(build_cache_dir(cache), "build cache"):  # a build on this cache
        assert main(["doctor", "--salvage", "--cache", str(cache)]) == 2
    assert "is in use by another site-builder command" in capsys.readouterr().err
    assert sorted(p.name for p in cache.iterdir()) == ["cache.db"]  # not moved aside
    assert main(["doctor", "--salvage", "--cache", str(cache)]) == 0  # once it has ended


def test_cli_message_names_the_folder(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "output"
    with held(out, "output folder"):
        assert main(["publish", "--output", str(out), "--to", str(tmp_path / "www")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("site-builder: error: the output folder ") and str(out) in err
    assert "wait for it to end, or stop it" in err
