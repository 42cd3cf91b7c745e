"""Worker processes of the build.

- :func:`worker_pool`: the build's pool for work that receives what it reads (the families'
  partitions, the analysis stage's plies and rows). Its workers are forked from a small server
  process, not from the build, so each holds the libraries and its task's data, not a copy of
  the build's memory.
- :func:`fork_pool`: workers forked from the build, which inherit the site (closures
  included) instead of receiving it: the render's when its items cannot be made again.
- :func:`fresh_pool`: new processes ("spawn") that load what they need themselves: the
  render's, which make the site's items again from the site as the build pickled it.
"""

from __future__ import annotations

import contextlib
import ctypes
import multiprocessing
import os
import signal
import sys
import threading
import time
import weakref
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import FIRST_EXCEPTION, Future, ProcessPoolExecutor, wait
from multiprocessing import forkserver
from typing import Any, TypeVar

T = TypeVar("T")

#: prctl option: the signal a process gets when its parent dies (linux/prctl.h).
_PR_SET_PDEATHSIG = 1
#: What a worker inherited and must keep, unused, until it exits (see :func:`keep`).
_KEPT: list[object] = []
#: Seconds a terminated worker gets to exit before it is killed.
_GRACE_S = 5.0
#: The build's worker pool while :func:`worker_pool` is open, and how it is made again
#: (:func:`end_idle_workers`).
_POOL: ProcessPoolExecutor | None = None
_POOL_PID = 0
_MAKE_POOL: Callable[[], ProcessPoolExecutor] | None = None
#: Each open pool's task pipe, by its inode (see :func:`_drain_task_pipe`).
_TASK_PIPES: weakref.WeakKeyDictionary[ProcessPoolExecutor, int] = weakref.WeakKeyDictionary()
#: Set inside :func:`one_process`.
_ONE_PROCESS = False
#: What the pool's server imports once, so that each worker starts with it.
_PRELOAD = [
    "site_builder.analysis.stage",
    "site_builder.families.agreement",
    "site_builder.families.bayesian",
    "site_builder.families.conformance",
    "site_builder.families.intrinsic",
    "site_builder.families.quality",
]


def processes() -> int:
    """Processes for the metrics and the render: one per core, at most 8 (each worker pays
    a start-up cost); 1 inside :func:`one_process`."""
    if _ONE_PROCESS:
        return 1
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else 1
    return max(1, min(cores, 8))


@contextlib.contextmanager
def one_process() -> Iterator[None]:
    """Within the block :func:`processes` is 1: the work stays in this process (a small
    site's, where starting workers would cost more than they share)."""
    global _ONE_PROCESS
    before, _ONE_PROCESS = _ONE_PROCESS, True
    try:
        yield
    finally:
        _ONE_PROCESS = before


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
    release_free_memory()  # a forked worker's RSS starts as this process's
    with _stopped_on_error("fork", workers, initializer) as pool:
        yield pool


@contextlib.contextmanager
def fresh_pool(
    workers: int, initializer: Callable[[], None] | None = None
) -> Iterator[ProcessPoolExecutor]:
    """:func:`fork_pool`'s pool, but of new processes: each imports what it runs and holds
    what ``initializer`` (a picklable callable) loads, not a copy of this process's memory,
    which every forked worker's RSS counts again. Stopped as :func:`fork_pool`'s."""
    with _stopped_on_error("spawn", workers, initializer) as pool:
        yield pool


@contextlib.contextmanager
def _stopped_on_error(
    method: str, workers: int, initializer: Callable[[], None] | None
) -> Iterator[ProcessPoolExecutor]:
    pool = ProcessPoolExecutor(
        workers,
        mp_context=multiprocessing.get_context(method),
        initializer=_start,
        initargs=(os.getpid(), initializer),
    )
    _task_pipe(pool)
    try:
        yield pool
    except BaseException:
        stop(pool)
        raise
    pool.shutdown(wait=True)


@contextlib.contextmanager
def worker_pool(workers: int) -> Iterator[ProcessPoolExecutor | None]:
    """The build's pool of ``workers`` processes (None for one: the work stays in the build's
    process), found by :func:`shared_pool` while the block is open.

    Its workers are forked, as they are first needed, from Python's "forkserver", a new
    process that imports only :data:`_PRELOAD`: a worker forked from the build itself maps
    the build's whole memory (on a large site, gigabytes in each worker's RSS) though its
    tasks read none of it. The workers ignore Ctrl-C, stop on SIGTERM and die with the server,
    which ends when the build's process does. Leaving the block by an exception ends them at
    once (:func:`stop`); leaving it normally waits for them."""
    global _POOL, _POOL_PID, _MAKE_POOL
    if workers <= 1:
        yield None
        return
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload(_PRELOAD)
    forkserver.ensure_running()  # now, not at a first task: an interruption then is clean

    def make() -> ProcessPoolExecutor:
        pool = ProcessPoolExecutor(
            workers, mp_context=context, initializer=_start, initargs=(None, _one_blas_thread)
        )
        _task_pipe(pool)
        return pool

    _POOL, _POOL_PID, _MAKE_POOL = make(), os.getpid(), make
    try:
        try:
            yield _POOL
        except BaseException:
            if _POOL is not None:
                stop(_POOL)
            raise
        finally:
            pool, _POOL, _MAKE_POOL = _POOL, None, None
        if pool is not None:
            pool.shutdown(wait=True)
    finally:
        _stop_server()


def end_idle_workers() -> None:
    """End the workers of the build's pool (:func:`worker_pool`) once its tasks are done: the
    next task starts new ones from the server. An idle worker keeps the high water of the
    partitions it ran (at 30× the demo, 0.55 to 0.60 GB each against 0.19 GB for a new one),
    counted while the build's process runs a family's global steps alone."""
    global _POOL
    pool = shared_pool()
    if pool is None or _MAKE_POOL is None:
        return
    pool.shutdown(wait=True)  # interrupted, the pool is still the one worker_pool stops
    _POOL = _MAKE_POOL()


def _stop_server() -> None:
    """End the forkserver once its workers have: it holds the preloaded libraries (about
    0.2 GB), idle beside the render's processes. multiprocessing has no public way to stop
    it; its own tests call ``_stop``, which closes the server's pipe and waits for it."""
    stop_server = getattr(forkserver._forkserver, "_stop", None)
    if stop_server is not None:
        stop_server()


def results(futures: list[Future[T]]) -> list[T]:
    """The futures' results in order; the first error as soon as any task fails (not after
    the tasks before it, which may run for long)."""
    wait(futures, return_when=FIRST_EXCEPTION)
    for future in futures:
        if future.done() and future.exception() is not None:
            future.result()
    return [future.result() for future in futures]


def _one_blas_thread() -> None:
    # As in the build's metrics (families.driver): a multi-threaded BLAS sums in an order
    # that depends on the machine's cores.
    from threadpoolctl import threadpool_limits  # type: ignore[import-untyped]

    threadpool_limits(limits=1, user_api="blas")


def shared_pool() -> ProcessPoolExecutor | None:
    """The pool of the open :func:`worker_pool` of this process, if any (never in a process
    forked from it: a pool does not survive a fork)."""
    return _POOL if os.getpid() == _POOL_PID else None


def pool_map(work: Callable[[Any], T], items: Sequence[Any]) -> list[T]:
    """``[work(item) for item in items]``, in the build's pool (:func:`shared_pool`) when one
    is open, else here (``work``: a module-level function)."""
    pool = shared_pool()
    if pool is None or len(items) < 2:
        return [work(item) for item in items]
    found = results([pool.submit(work, item) for item in items])
    end_idle_workers()  # not after an error: then worker_pool stops the workers at once
    return found


def release_free_memory() -> None:
    """Give the C library's freed heap back to the system (glibc's malloc_trim; nothing
    elsewhere): Python's allocator frees, but the heap keeps what was freed at its top.
    Arrow's memory pool (mimalloc) gives back what it keeps for reuse too."""
    arrow = sys.modules.get("pyarrow")
    if arrow is not None:
        arrow.default_memory_pool().release_unused()
    if sys.platform.startswith("linux"):
        with contextlib.suppress(OSError, AttributeError):
            ctypes.CDLL(None).malloc_trim(0)


@contextlib.contextmanager
def ctrl_c_held() -> Iterator[None]:
    """Ctrl-C (SIGINT) held back, not lost, while a pool starts its workers: a worker started
    as a new process inherits the block through its imports, until :func:`_start` ignores
    the signal, so a Ctrl-C then never gives a worker's traceback. Delivered here after."""
    if not hasattr(signal, "pthread_sigmask"):
        yield
        return
    held = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, held)


def _start(parent: int | None, initializer: Callable[[], None] | None) -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if hasattr(signal, "pthread_sigmask"):  # held while the worker started (ctrl_c_held)
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
    signal.signal(signal.SIGTERM, signal.SIG_DFL)  # the build's handler raises in the worker
    if sys.platform.startswith("linux"):
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    _let_server_end()
    # The build died before the line above (a pool's worker is the server's child: the
    # server ends with the build, and then the worker is adopted).
    if os.getppid() != parent if parent is not None else os.getppid() == 1:
        os._exit(1)
    if initializer is not None:
        initializer()


def _let_server_end() -> None:
    """In a worker forked by the forkserver: close this worker's copy of the pipe whose end
    tells the server its build has gone. multiprocessing hands every such worker that copy;
    held, a build killed outright (SIGKILL, the out-of-memory killer) left the server waiting
    for its workers and the workers for the server, forever."""
    server: Any = forkserver._forkserver  # its fields are private; no public way exists
    alive = getattr(server, "_forkserver_alive_fd", None)
    if alive is not None and getattr(server, "_forkserver_pid", None) is None:
        os.close(alive)  # not this worker's own server (it started none): the build's
        server._forkserver_alive_fd = None


def stop(pool: ProcessPoolExecutor, grace: float = _GRACE_S) -> None:
    """Drop the pool's queued tasks and end its workers now (the build is failing or being
    interrupted: their results would be thrown away): SIGTERM, a bounded wait, then SIGKILL."""
    # shutdown() forgets the pool's processes, so take them first. concurrent.futures has
    # no public way to end a running task before Python 3.14's terminate_workers().
    workers = list((getattr(pool, "_processes", None) or {}).values())
    tasks = getattr(pool, "_call_queue", None)
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
    # Every worker has ended or been killed: none reads the pipe. (Not asked of is_alive(),
    # which can call a reaped child alive while the pool's own thread polls it too: CPython
    # gh-130895, seen here with Python 3.11.2.)
    _drain_task_pipe(pool, tasks)


def _task_pipe(pool: ProcessPoolExecutor) -> None:
    """Note which pipe carries ``pool``'s tasks (see :func:`_drain_task_pipe`)."""
    reader = getattr(getattr(pool, "_call_queue", None), "_reader", None)
    if reader is not None:
        _TASK_PIPES[pool] = os.fstat(reader.fileno()).st_ino


def _drain_task_pipe(pool: ProcessPoolExecutor, tasks: object) -> None:
    """Read and drop what is left in the pipe that carried tasks to the (now ended) workers.

    Before Python 3.12 (CPython gh-94777), a task too large for the pipe's buffer, queued
    when the workers died, blocks the pool's feeder thread forever; Python's exit hook waits
    for that thread, and the command never returns. A thread of ours reads the pipe until
    the feeder has written everything and closed it. It reads from its own duplicate of the
    read end, checked to be that pipe: the feeder closes the original when it ends, at any
    moment, and its number may then name another file."""
    reader = getattr(tasks, "_reader", None)
    inode = _TASK_PIPES.pop(pool, None)
    if reader is None or inode is None:
        return
    try:
        fd = os.dup(reader.fileno())
    except (OSError, ValueError):  # closed already: the feeder has ended
        return
    if os.fstat(fd).st_ino != inode:
        os.close(fd)
        return
    threading.Thread(target=_drain, args=(fd,), name="task-pipe-drain", daemon=True).start()


def _drain(fd: int) -> None:
    try:
        while os.read(fd, 1 << 16):
            pass
    except OSError:
        pass
    finally:
        os.close(fd)
