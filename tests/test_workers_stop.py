"""Worker processes stop for real: an error or Ctrl-C in the build ends its forked workers, and
the process exits promptly (issue 19 item 3). Each case runs in a subprocess with a deadline,
since a worker left alive keeps a process from exiting after its last line."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import psutil
import pytest

ROOT = Path(__file__).resolve().parents[1]
#: A hang detector, not a timing: a worker left alive sleeps for an hour.
DEADLINE_S = 120

_SCRIPT = textwrap.dedent(
    """
    import os, sys, time
    from site_builder.forked import fork_pool

    def sleep_long():
        time.sleep(3600)

    with fork_pool(1) as pool:
        future = pool.submit(sleep_long)
        pid = next(iter(pool._processes))
        print(pid, flush=True)
        if sys.argv[1] == "error":
            time.sleep(0.5)
            raise SystemExit("a settings error in the build's own lane")
        future.result()  # Ctrl-C arrives while the build waits for the worker
    """
)


def _gone(pid: int, within: float = 5.0) -> bool:
    """Whether the process has ended (or is a zombie) within ``within`` seconds: a helper
    that reads its pipe to the end (the resource tracker) exits just after the build."""
    deadline = time.monotonic() + within
    while True:
        try:
            if psutil.Process(pid).status() == psutil.STATUS_ZOMBIE:
                return True
        except psutil.NoSuchProcess:
            return True
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)


def _start(mode: str) -> tuple[subprocess.Popen[str], int]:
    proc = subprocess.Popen(
        [sys.executable, "-c", _SCRIPT, mode],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    worker = int(proc.stdout.readline())
    return proc, worker


def test_an_error_in_the_build_ends_the_worker_and_the_process_exits() -> None:
    proc, worker = _start("error")
    try:
        _out, err = proc.communicate(timeout=DEADLINE_S)
    finally:
        proc.kill()
    assert proc.returncode == 1
    assert "settings error" in err
    assert _gone(worker)


def test_ctrl_c_while_waiting_for_a_worker_ends_it() -> None:
    proc, worker = _start("interrupt")
    try:
        time.sleep(0.5)
        proc.send_signal(signal.SIGINT)
        _out, err = proc.communicate(timeout=DEADLINE_S)
    finally:
        proc.kill()
    assert proc.returncode == -signal.SIGINT  # Python ends by the signal it did not handle
    assert "KeyboardInterrupt" in err
    assert _gone(worker)


@pytest.mark.slow
def test_the_fail_at_once_test_exits_after_its_summary(tmp_path: Path) -> None:
    """What was seen: this test printed "1 passed" and then waited for the worker's hour."""
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "tests/test_workers.py",
            "-k",
            "fails_at_once",
            f"--basetemp={tmp_path / 'basetemp'}",
        ],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=DEADLINE_S * 2,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "1 passed" in done.stdout


def test_a_settings_error_in_a_build_exits_at_once(tmp_path: Path) -> None:
    """What was seen: `site-builder build` exited 8 s after printing a settings error, the
    time its metrics worker took. The error is now found when the settings are read."""
    from tests.conftest import DATA, make_content

    content = make_content(tmp_path, {"g.pgn": DATA / "small-site/games/WorldChamp1886.pgn"})
    (content / "site.toml").write_text("[results]\ngm_min = 150\ngm_max = 70\n")
    done = subprocess.run(
        [
            *(sys.executable, "-m", "site_builder", "build", "--content", str(content)),
            *("--output", str(tmp_path / "out"), "--cache", str(tmp_path / "cache")),
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=DEADLINE_S,
    )
    assert done.returncode == 2
    assert "[results] gm_min = 150 exceeds gm_max = 70" in done.stderr
    assert "Traceback" not in done.stderr
    assert not (tmp_path / "out").exists()


@pytest.mark.slow
def test_ctrl_c_during_a_builds_metrics_exits_promptly(tmp_path: Path) -> None:
    """Ctrl-C end to end: sent once the build has reported its analysis and forked a metrics
    worker, it gives "Interrupted", exit 130, no traceback and no worker left. (On this small
    site the worker would finish within seconds anyway; the hour-long worker of
    test_ctrl_c_while_waiting_for_a_worker_ends_it is what shows the wait is gone.)"""
    from tests.conftest import DATA

    out, cache = tmp_path / "out", tmp_path / "cache"
    proc = subprocess.Popen(
        [
            *(sys.executable, "-m", "site_builder", "build", "--no-progress"),
            *("--content", str(DATA / "small-site"), "--output", str(out), "--cache", str(cache)),
        ],
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    build = psutil.Process(proc.pid)
    try:
        assert proc.stdout is not None
        for line in proc.stdout:  # the analysis line comes just before the metrics
            if line.startswith("Analysis"):
                break
        worker = None
        deadline = time.monotonic() + DEADLINE_S
        while worker is None and proc.poll() is None and time.monotonic() < deadline:
            with contextlib.suppress(psutil.Error):
                worker = next((c for c in build.children() if "python" in c.name()), None)
            time.sleep(0.05)
        if worker is None:
            pytest.skip("the build forked no worker (one core, or it finished first)")
        proc.send_signal(signal.SIGINT)
        _out, err = proc.communicate(timeout=DEADLINE_S)
    finally:
        proc.kill()
    assert proc.returncode == 130, err
    assert "Interrupted" in err and "Traceback" not in err
    assert _gone(worker.pid)


_KILLED = textwrap.dedent(
    """
    import os, signal, sys
    from site_builder.forked import fork_pool, results, worker_pool

    def die(payload):
        os.kill(os.getpid(), signal.SIGKILL)

    if __name__ == "__main__":
        pool = worker_pool if sys.argv[1] == "server" else fork_pool
        with pool(2) as workers:
            # 2 MB tasks: more than the pipe to the workers holds once they are dead.
            results([workers.submit(die, b"x" * 2_000_000) for _ in range(20)])
    """
)


@pytest.mark.parametrize("kind", ["server", "fork"])
def test_a_killed_worker_with_large_tasks_queued_lets_the_process_exit(
    kind: str, tmp_path: Path
) -> None:
    """What was seen: a build whose workers died while the pool's pipe was full of queued
    tasks printed its error and never exited (Python's exit hook waited for the pool's
    feeder thread, blocked writing to a pipe no worker reads)."""
    script = tmp_path / "killed.py"  # a file, so the server's workers can import its main
    script.write_text(_KILLED)
    done = subprocess.run(
        [sys.executable, str(script), kind],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        timeout=DEADLINE_S,
    )
    assert done.returncode == 1
    assert "BrokenProcessPool" in done.stderr


def test_a_build_whose_worker_is_killed_says_so_and_exits(tmp_path: Path) -> None:
    """End to end: each analysis-stage task kills its worker (tests/dying_worker.py, imported
    by the pool's server). The build gives a message, no traceback, exit 71, and returns.
    (This site's chunks of games are too small to fill the pipe; the test above shows the
    hang that a large site's chunks gave.)"""
    from tests.conftest import DATA

    script = textwrap.dedent(
        f"""
        import sys
        import site_builder.forked as forked
        forked.processes = lambda: 2  # the pool, even on one core
        forked._PRELOAD.append("tests.dying_worker")
        from site_builder.cli import main
        if __name__ == "__main__":
            sys.exit(main(["build", "--no-progress", "--content", {str(DATA / "small-site")!r},
                           "--output", {str(tmp_path / "out")!r},
                           "--cache", {str(tmp_path / "cache")!r}]))
        """
    )
    (tmp_path / "build.py").write_text(script)
    done = subprocess.run(
        [sys.executable, str(tmp_path / "build.py")],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        timeout=DEADLINE_S,
    )
    assert done.returncode == 71, done.stderr
    assert "a worker process of the build ended abruptly" in done.stderr
    assert "Traceback" not in done.stderr
    assert not (tmp_path / "out").exists()


_HELD = textwrap.dedent(
    """
    import multiprocessing, os, signal, sys, time
    if __name__ == "__mp_main__":
        time.sleep(2)  # a new worker's imports: Ctrl-C arrives here
    from site_builder.forked import ctrl_c_held, fresh_pool

    def task():
        return os.getpid()

    if __name__ == "__main__":
        with fresh_pool(1) as pool:
            with ctrl_c_held() if sys.argv[1] == "held" else open(os.devnull):
                future = pool.submit(task)
            time.sleep(0.5)
            (child,) = multiprocessing.active_children()
            os.kill(child.pid, signal.SIGINT)
            print("served", future.result() == child.pid)
    """
)


@pytest.mark.parametrize("held", [True, False])
def test_ctrl_c_while_a_new_worker_imports_is_held_until_it_ignores_it(
    held: bool, tmp_path: Path
) -> None:
    """A worker started as a new process (the render's) spends its first second importing.
    A Ctrl-C then (it reaches the whole process group) would end it with a traceback; held
    while the pool starts it, it reaches the worker only once the worker ignores it."""
    script = tmp_path / "held.py"  # a file, so the new worker imports it as its main
    script.write_text(_HELD)
    done = subprocess.run(
        [sys.executable, str(script), "held" if held else "free"],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        timeout=DEADLINE_S,
    )
    if held:
        assert done.returncode == 0 and "served True" in done.stdout, done.stderr
        assert "Traceback" not in done.stderr
    else:  # what the hold prevents
        assert "KeyboardInterrupt" in done.stderr


_SERVER_SCRIPT = textwrap.dedent(
    """
    import os, time
    from multiprocessing import forkserver
    from site_builder.forked import worker_pool

    with worker_pool(2) as pool:  # a task the server's workers can unpickle: time.sleep
        futures = [pool.submit(time.sleep, 3600) for _ in range(2)]
        while len(pool._processes) < 2 or not all(p.is_alive() for p in pool._processes.values()):
            time.sleep(0.05)
        time.sleep(1.0)  # the workers are in their tasks
        print(forkserver._forkserver._forkserver_pid, *pool._processes, flush=True)
        time.sleep(3600)
    """
)


def test_a_build_killed_outright_takes_its_forkserver_and_workers_with_it() -> None:
    """SIGKILL (or the out-of-memory killer) runs no cleanup: the server must see its build
    gone and end, and its workers with it, not wait for each other for ever."""
    proc = subprocess.Popen(
        [sys.executable, "-c", _SERVER_SCRIPT],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    try:
        server, *workers = (int(x) for x in proc.stdout.readline().split())
        assert len(workers) == 2 and all(_alive(p) for p in (server, *workers))
        proc.kill()
        proc.wait(timeout=DEADLINE_S)
        assert _gone(server, within=10.0)
        assert all(_gone(w, within=10.0) for w in workers)
    finally:
        proc.kill()
        for pid in (server, *workers) if "workers" in locals() else ():
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)


def _alive(pid: int) -> bool:
    return not _gone(pid, within=0.0)
