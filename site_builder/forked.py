"""Worker processes forked from the build: they inherit the site (closures included)
instead of receiving it."""

from __future__ import annotations

import contextlib
import ctypes
import multiprocessing
import os
import signal
import sys
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ProcessPoolExecutor

#: prctl option: the signal a process gets when its parent dies (linux/prctl.h).
_PR_SET_PDEATHSIG = 1
#: What a worker inherited and must keep, unused, until it exits (see :func:`keep`).
_KEPT: list[object] = []
#: Seconds a terminated worker gets to exit before it is killed.
_GRACE_S = 5.0


def processes() -> int:
    """Processes for the metrics and the render: one per core, at most 8 (each worker pays
    a start-up cost)."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else 1
    return max(1, min(cores, 8))


def keep(inherited: object) -> None:
    """Hold an object the worker inherited (a build cache) until the worker exits: it is
    never used or closed here, since closing an SQLite connection inherited across a fork
    could let SQLite clean up files the build's process still uses."""
    _KEPT.append(inherited)


@contextlib.contextmanager
def fork_pool(
    workers: int, initializer: Callable[[], None] | None = None
) -> Iterator[ProcessPoolExecutor]:
    """A pool of ``workers`` processes forked from this one. They ignore Ctrl-C (the build
    decides what to do), stop on SIGTERM, and on Linux die with the build even when it is
    killed with SIGKILL, so no worker outlives it to write into a later build's staging.

    Leaving the block normally waits for the queued tasks; leaving it by an exception (an
    error, Ctrl-C, SIGTERM) ends the workers at once with :func:`stop`.
    """
    pool = ProcessPoolExecutor(
        workers,
        mp_context=multiprocessing.get_context("fork"),
        initializer=_start,
        initargs=(os.getpid(), initializer),
    )
    try:
        yield pool
    except BaseException:
        stop(pool)
        raise
    pool.shutdown(wait=True)


def _start(parent: int, initializer: Callable[[], None] | None) -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)  # the build's handler raises in the worker
    if sys.platform.startswith("linux"):
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    if os.getppid() != parent:  # the build died before the line above
        os._exit(1)
    if initializer is not None:
        initializer()


def stop(pool: ProcessPoolExecutor, grace: float = _GRACE_S) -> None:
    """Drop the pool's queued tasks and end its workers now (the build is failing or being
    interrupted: their results would be thrown away): SIGTERM, a bounded wait, then SIGKILL."""
    # shutdown() forgets the pool's processes, so take them first. concurrent.futures has
    # no public way to end a running task before Python 3.14's terminate_workers().
    workers = list((getattr(pool, "_processes", None) or {}).values())
    pool.shutdown(wait=False, cancel_futures=True)
    for process in workers:
        if process.is_alive():
            process.terminate()
    deadline = time.monotonic() + grace
    for process in workers:
        process.join(max(0.0, deadline - time.monotonic()))
        if process.is_alive():
            process.kill()
            process.join(grace)
