"""Worker processes forked from the build: they inherit the site (closures included)
instead of receiving it."""

from __future__ import annotations

import ctypes
import multiprocessing
import os
import signal
import sys
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor

#: prctl option: the signal a process gets when its parent dies (linux/prctl.h).
_PR_SET_PDEATHSIG = 1
#: What a worker inherited and must keep, unused, until it exits (see :func:`keep`).
_KEPT: list[object] = []


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


def fork_pool(workers: int, initializer: Callable[[], None] | None = None) -> ProcessPoolExecutor:
    """A pool of ``workers`` processes forked from this one. They ignore Ctrl-C (the build
    decides what to do), stop on SIGTERM, and on Linux die with the build even when it is
    killed with SIGKILL, so no worker outlives it to write into a later build's staging."""
    return ProcessPoolExecutor(
        workers,
        mp_context=multiprocessing.get_context("fork"),
        initializer=_start,
        initargs=(os.getpid(), initializer),
    )


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


def stop(pool: ProcessPoolExecutor) -> None:
    """Drop the pool's queued tasks and end its workers now (the build is failing or being
    interrupted: their results would be thrown away)."""
    pool.shutdown(wait=False, cancel_futures=True)
    # concurrent.futures has no public way to end a running task before Python 3.14.
    for process in list((getattr(pool, "_processes", None) or {}).values()):
        process.terminate()
