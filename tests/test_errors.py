"""Errors, not tracebacks (issue 19 items 7 and 8): damaged or unwritable caches, a full
disk, a port in use, garbage in a PGN. Each test first reproduces what was seen: a traceback,
or bytes copied where they do no good."""

from __future__ import annotations

import errno
import os
import re
import socket
import sqlite3
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from site_builder import cli
from site_builder.incremental import BuildCache
from tests.conftest import DATA, make_content, requires_engine

TINY = "[analysis]\ndepth = 4\nmultipv = 2\nworkers = 1\n"
CONTROLS = re.compile(rb"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")


def run(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """The CLI in a subprocess, as a user runs it; never a traceback."""
    done = subprocess.run(
        [sys.executable, "-m", "site_builder", *args, "--no-progress"]
        if args[0] in {"build", "analyse"}
        else [sys.executable, "-m", "site_builder", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert "Traceback" not in done.stderr, done.stderr
    return done


def tiny_content(root: Path, extra: dict[str, Path | str] | None = None) -> Path:
    return make_content(root, {"wc.pgn": DATA / "broken/latin1.pgn", **(extra or {})}, TINY)


# --- the build cache -------------------------------------------------------------------


def test_damaged_build_cache_db_is_moved_aside(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Was: sqlite3.DatabaseError: file is not a database, from diskcache, as a traceback.
    folder = tmp_path / "analysis-build"
    with BuildCache(folder) as cache:
        cache.set("k", "v")
    garbage = os.urandom(4096)
    (folder / "cache.db").write_bytes(garbage)
    with BuildCache(folder) as cache:
        assert cache.get("k") is None  # a fresh, empty cache
        cache.set("k", "w")
        assert cache.get("k") == "w"
    aside = tmp_path / "analysis-build.damaged-1"
    assert (aside / "cache.db").read_bytes() == garbage  # kept, not deleted
    err = capsys.readouterr().err
    assert f"the build cache {folder / 'cache.db'} is damaged" in err
    assert f"moved to {aside}" in err


@pytest.mark.parametrize("offset", [4096, 40_000, 120_000])
def test_build_cache_db_damaged_inside_is_moved_aside_before_use(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], offset: int
) -> None:
    # Was: "database disk image is malformed" halfway through a build (or a silent miss).
    folder = tmp_path / "analysis-build"
    with BuildCache(folder) as cache, cache.transact():
        for i in range(3000):
            cache.set(f"plies|{i}", ("e2e4", i))
    db = folder / "cache.db"
    assert db.stat().st_size > offset + 8192
    with db.open("r+b") as f:
        f.seek(offset)
        f.write(os.urandom(8192))
    with BuildCache(folder) as cache:
        assert cache.get("plies|1") is None
    assert (tmp_path / "analysis-build.damaged-1/cache.db").exists()
    err = capsys.readouterr().err
    assert "is damaged (database disk image is malformed" in err and "\n" not in err.strip()


def _quick_checks(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The databases SQLite's quick_check is run on from now on (it opens them read-only)."""
    checks: list[str] = []
    connect = sqlite3.connect

    def spy(database: str, *args: object, **kwargs: object) -> sqlite3.Connection:
        if "mode=ro" in str(database):
            checks.append(str(database))
        return connect(database, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(sqlite3, "connect", spy)
    return checks


def test_a_build_cache_closed_by_its_build_is_not_read_whole_again(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """SQLite's quick_check reads the whole file (5.5 s for a 2.2 GB build cache): a cache its
    build closed is opened without it; a write since then, even a damage in the same instant,
    brings it back; a cache never closed (a killed build) is checked."""
    from site_builder import incremental

    checks = _quick_checks(monkeypatch)

    def reopen(stamp: bool = True) -> int:
        monkeypatch.setattr(incremental, "_CHECKED", set())  # a new process
        checks.clear()
        with BuildCache(folder, stamp=stamp) as cache:
            cache.get("plies|1")
        return len(checks)

    folder = tmp_path / "analysis-build"
    with BuildCache(folder, stamp=True) as cache, cache.transact():
        for i in range(3000):
            cache.set(f"plies|{i}", ("e2e4", i))
    assert (folder / incremental.SOUND_STAMP).is_file()
    assert reopen() == 0 and reopen() == 0
    assert reopen(stamp=False) == 0  # a worker's: the stamp is used, then gone
    assert reopen() == 1  # so the next one checks, and stamps again
    assert reopen() == 0
    stamp = folder / incremental.SOUND_STAMP
    stamp.write_bytes(stamp.read_bytes()[:20])  # a stamp cut short (the process died)
    assert reopen() == 1
    with pytest.raises(sqlite3.DatabaseError), BuildCache(folder, stamp=True):
        raise sqlite3.DatabaseError("database disk image is malformed")  # found while read
    assert reopen() == 1  # a failed build leaves no stamp
    db = folder / "cache.db"
    with db.open("r+b") as f:  # at once: the same coarse file time as the close
        f.seek(40_000)
        f.write(os.urandom(8192))
    assert reopen() == 1
    assert (tmp_path / "analysis-build.damaged-1/cache.db").exists()
    assert "is damaged (database disk image is malformed" in capsys.readouterr().err


def test_a_new_worker_takes_the_builds_word_that_the_cache_is_sound(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A render worker started as a new process opens the build cache while the build has it
    open and written (so its stamp no longer matches): handed the files the build found sound,
    it does not read the whole cache.db again; without them it would."""
    from site_builder import incremental

    checks = _quick_checks(monkeypatch)
    folder = tmp_path / "analysis-build"
    with BuildCache(folder, stamp=True) as cache:
        cache.set("plies|1", ("e2e4", 1))
    monkeypatch.setattr(incremental, "_CHECKED", set())  # the build's process
    with BuildCache(folder, stamp=True) as build:
        with build.transact():
            for i in range(3000):
                build.set(f"plies|{i}", ("e2e4", i))
        word = incremental.checked_databases()
        assert word == {folder / "cache.db"}
        for handed, reads in ((word, 0), (frozenset(), 1)):
            monkeypatch.setattr(incremental, "_CHECKED", set())  # a new worker
            incremental.count_as_checked(handed)
            checks.clear()
            with BuildCache(folder) as worker:
                assert worker.get("plies|2999") == ("e2e4", 2999)
            assert len(checks) == reads


@pytest.mark.parametrize(
    "value",
    [b"\x01" * 100_000, "move rows " * 10_000, {"rows": list(range(30_000))}],
    ids=["bytes", "text", "pickle"],
)
def test_garbled_value_file_is_discarded_and_recomputed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], value: object
) -> None:
    # Was: random bytes in a value file unpickled into nonsense ("too many values to unpack"
    # deep in the metrics) or a pickle error, as a traceback.
    folder = tmp_path / "analysis-build"
    with BuildCache(folder) as cache:
        cache.set("plies|g1", value)
        cache.set("plies|g2", value)
        assert cache.get("plies|g1") == value
    files = sorted(folder.rglob("*.val"))
    assert len(files) == 2
    for path in files:
        path.write_bytes(os.urandom(300))
    with BuildCache(folder) as cache:
        assert cache.get("plies|g1") is None and cache.get("plies|g2") is None
        assert "plies|g1" not in cache  # discarded: the build recomputes and stores it again
        cache.set("plies|g1", value)
        assert cache.get("plies|g1") == value
    err = capsys.readouterr().err
    assert err.count("warning:") == 1 and "is garbled; it was discarded and is recomputed" in err
    assert str(folder) in err


def test_build_cache_of_an_older_layout_is_emptied(tmp_path: Path) -> None:
    import diskcache

    folder = tmp_path / "analysis-build"
    with diskcache.Cache(str(folder)) as old:  # value files without checksums
        old.set("plies|g1", b"\x02" * 100_000)
    with BuildCache(folder) as cache:
        assert cache.get("plies|g1") is None


@requires_engine
def test_cli_recovers_from_damaged_build_cache(tmp_path: Path) -> None:
    content = tiny_content(tmp_path)
    build = ("build", "--content", str(content), "--output", str(tmp_path / "out"))
    assert run(*build, cwd=tmp_path).returncode == 0
    build_cache = tmp_path / ".cache/analysis-build"
    values = sorted(build_cache.rglob("*.val"))
    assert values, "the build cache keeps a large entry in a value file"
    for path in values:
        path.write_bytes(b"garbage")
    # A setting that the results family does not use: the build reads its kept result.
    (content / "site.toml").write_text(TINY + "[intrinsic]\nmilepost_width = 30\n")
    done = run(*build, cwd=tmp_path)
    assert done.returncode == 0
    assert "is garbled; it was discarded and is recomputed" in done.stderr
    (build_cache / "cache.db").write_bytes(b"not a database" * 100)
    done = run(*build, cwd=tmp_path)
    assert done.returncode == 0
    assert "is damaged (file is not a database); it was moved to" in done.stderr
    assert (tmp_path / ".cache/analysis-build.damaged-1/cache.db").exists()
    done = run(*build, cwd=tmp_path)
    assert done.returncode == 0 and "warning" not in done.stderr


# --- read-only caches and full disks: real file systems where this user may mount ------


@pytest.fixture
def tmpfs(tmp_path: Path) -> Iterator[Callable[[str, str], Path]]:
    """mount(name, size) → a fresh tmpfs of that size under tmp_path; skips if not root."""
    mounted: list[Path] = []

    def mount(name: str, size: str) -> Path:
        where = tmp_path / name
        where.mkdir()
        if os.geteuid() != 0:
            pytest.skip("mounting a small file system needs root")
        done = subprocess.run(
            ["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(where)],
            capture_output=True,
        )
        if done.returncode != 0:
            pytest.skip(f"mount not permitted here: {done.stderr!r}")
        mounted.append(where)
        return where

    yield mount
    for where in reversed(mounted):
        subprocess.run(["umount", "-l", str(where)], check=False)


def read_only(where: Path, tmpfs_mounted: bool) -> None:
    if tmpfs_mounted:
        subprocess.run(["mount", "-o", "remount,ro", str(where)], check=True)
    else:
        for path in [where, *where.rglob("*")]:
            path.chmod(path.stat().st_mode & ~0o222)


@requires_engine
def test_read_only_cache_is_one_message(tmp_path: Path, tmpfs: Callable[[str, str], Path]) -> None:
    # Was: sqlite3.OperationalError: attempt to write a readonly database, as a traceback.
    content = tiny_content(tmp_path)
    disk = tmpfs("disk", "64m")
    cache = disk / "analysis"
    assert (
        run("analyse", "--content", str(content), "--cache", str(cache), cwd=tmp_path).returncode
        == 0
    )
    read_only(disk, True)
    done = run("analyse", "--content", str(content), "--cache", str(cache), cwd=tmp_path)
    assert done.returncode == cli.EXIT_IO
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and f"{cache}-build is on a read-only file system" in lines[0]
    assert "--cache DIR" in lines[0]


def test_read_only_evaluation_cache_is_one_message(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    # SQLite says "attempt to write a readonly database" without a path: the folder is named.
    from site_builder import commands

    def fail(*args: object) -> int:
        exc = sqlite3.OperationalError("attempt to write a readonly database")
        exc.sqlite_errorcode = 8  # SQLITE_READONLY
        raise exc

    monkeypatch.setattr(commands, "build", fail)
    content = tiny_content(tmp_path)
    cache = tmp_path / "cache"
    cache.mkdir()
    if os.geteuid() != 0:
        cache.chmod(0o555)
    argv = ["build", "--content", str(content), "--cache", str(cache)]
    assert cli.main(argv) == cli.EXIT_IO
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and str(cache) in err and "--cache DIR" in err


@requires_engine
def test_full_disk_under_the_cache(tmp_path: Path, tmpfs: Callable[[str, str], Path]) -> None:
    # Was: sqlite3.OperationalError: database or disk is full, as a traceback.
    content = tiny_content(tmp_path)
    disk = tmpfs("disk", "64k")
    done = run(
        "analyse", "--content", str(content), "--cache", str(disk / "analysis"), cwd=tmp_path
    )
    assert done.returncode == cli.EXIT_IO
    assert "no space left while writing" in done.stderr and str(disk / "analysis") in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1


@requires_engine
def test_full_disk_under_the_output(tmp_path: Path, tmpfs: Callable[[str, str], Path]) -> None:
    # Was: OSError: [Errno 28] No space left on device, as a traceback.
    content = tiny_content(tmp_path)
    disk = tmpfs("disk", "256k")
    done = run("build", "--content", str(content), "--output", str(disk / "out"), cwd=tmp_path)
    assert done.returncode == cli.EXIT_IO, done.stderr
    assert "no space left while writing" in done.stderr and str(disk / "out") in done.stderr


@pytest.mark.parametrize(
    ("exc", "says"),
    [
        (
            OSError(errno.ENOSPC, "No space left on device", "/srv/out/index.html"),
            "no space left while writing /srv/out/index.html",
        ),
        (
            OSError(errno.EDQUOT, "Disk quota exceeded", "/srv/out/a.csv"),
            "no space left while writing /srv/out/a.csv",
        ),
        (
            OSError(errno.EROFS, "Read-only file system", "/srv/out"),
            "/srv/out is on a read-only file system",
        ),
        (
            PermissionError(errno.EACCES, "Permission denied", "/srv/out/x"),
            "permission denied: /srv/out/x",
        ),
        (
            OSError(errno.ENOSPC, "No space left on device"),
            "no space left while writing the output folder",
        ),
        (sqlite3.OperationalError("database or disk is full"), "no space left while writing"),
    ],
)
def test_main_maps_os_errors_to_one_line(
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    exc: Exception,
    says: str,
) -> None:
    # The same faults wherever they happen (any write of any command), without a real disk.
    from site_builder import commands

    if isinstance(exc, sqlite3.Error):
        exc.sqlite_errorcode = 13  # SQLITE_FULL

    def fail(*args: object) -> int:
        raise exc

    monkeypatch.setattr(commands, "build", fail)
    content = tiny_content(tmp_path)
    assert (
        cli.main(["build", "--content", str(content), "--output", str(tmp_path / "out")])
        == cli.EXIT_IO
    )
    err = capsys.readouterr().err
    assert err.startswith("site-builder: error: ") and says in err and err.count("\n") == 1


# --- serve ---------------------------------------------------------------------------


def test_serve_on_a_port_in_use(tmp_path: Path) -> None:
    # Was: OSError: [Errno 98] Address already in use, as a traceback.
    out = tmp_path / "output"
    out.mkdir()
    (out / "index.html").write_text("<!doctype html><title>x</title>", encoding="utf-8")
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        done = run("serve", "--output", str(out), "--port", str(port), cwd=tmp_path)
    assert done.returncode == 2
    assert f"port {port} on 127.0.0.1 is already in use" in done.stderr
    assert f"--port {port + 1}" in done.stderr


# --- garbage in a PGN ----------------------------------------------------------------


@requires_engine
def test_control_bytes_of_a_garbage_file_stay_out_of_the_report(tmp_path: Path) -> None:
    # Was: NUL, ESC and BEL bytes of a garbage file copied into report.html.
    garbage = (
        b'[Event "\x1b[31mX"]\n[White "A\x00"]\n[Black "B\x07"]\n\n1. e4 \x01\x02\x03\n'
        + bytes(range(32))
    )
    content = tiny_content(tmp_path, {})
    (content / "games/garbage.pgn").write_bytes(garbage)
    out = tmp_path / "out"
    done = run("build", "--content", str(content), "--output", str(out), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    report = (out / "report.html").read_bytes()
    assert b"garbage.pgn" in report and "\ufffd".encode() in report
    for page in out.rglob("*.html"):
        assert CONTROLS.search(page.read_bytes()) is None, page
