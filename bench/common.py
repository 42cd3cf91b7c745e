"""Shared helpers: real positions from the demo content, a machine description."""

from __future__ import annotations

import contextlib
import os
import platform
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import psutil

from site_builder.analysis.positions import analysed_plies, game_plies
from site_builder.analysis.stage import ingest
from site_builder.config import load_settings
from site_builder.model import GameRecord

ROOT = Path(__file__).resolve().parent.parent
CONTENT = ROOT / "content"
STOCKFISH = "/usr/games/stockfish"


def demo_games(folder: str = "world-championships", limit: int | None = None) -> list[GameRecord]:
    """Games of one demo folder, in date order."""
    settings = load_settings(CONTENT)
    games = [g for g in ingest(CONTENT, settings).games if f"/{folder}/" in f"/{g.source}"]
    games.sort(key=lambda g: (g.date.sort_key, g.source, g.line))
    return games[:limit] if limit else games


def demo_positions(n: int, folder: str = "world-championships") -> list[tuple[str, str]]:
    """The first n analysed (position, played move) pairs of the folder's games, unique."""
    seen: dict[str, str] = {}
    for g in demo_games(folder):
        for p in analysed_plies(game_plies(g, 9), 9):
            seen.setdefault(p.position, p.played)
            if len(seen) == n:
                return list(seen.items())
    return list(seen.items())


def machine() -> str:
    cpu = "unknown CPU"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    engine = subprocess.run(
        [STOCKFISH], input="uci\nquit\n", capture_output=True, text=True, timeout=10
    ).stdout.splitlines()[0]
    return f"{cpu}, {os.cpu_count()} cores, Python {platform.python_version()}, {engine}"


#: Seconds between samples of a watched tree's RSS, and between samples of its PSS.
RSS_EVERY, PSS_EVERY = 0.1, 1.0


def tree_memory(proc: psutil.Process, pss: bool) -> tuple[int, int, int]:
    """RSS and (with ``pss``) PSS summed over the process tree, and the RSS of ``proc``
    itself. RSS counts a page shared by a forked worker and the build once per process; PSS
    splits it among them, so its sum is what the tree occupies. PSS is read from each
    process's page tables, which costs the measured processes time: it is sampled less often
    than RSS."""
    rss_sum = pss_sum = own = 0
    try:
        procs = [proc, *proc.children(recursive=True)]
    except psutil.NoSuchProcess:
        return 0, 0, 0
    for p in procs:
        with contextlib.suppress(psutil.NoSuchProcess, psutil.AccessDenied):
            if pss:
                info = p.memory_full_info()
                pss_sum += getattr(info, "pss", info.rss)
            else:
                info = p.memory_info()
            rss_sum += info.rss
            if p is proc:
                own = info.rss
    return rss_sum, pss_sum, own


@dataclass
class Watched:
    """A whole command as a benchmark measures it."""

    wall: float
    #: the largest sum of RSS over the process tree (workers included)
    peak_rss: int
    #: the largest sum of PSS (0 unless asked for)
    peak_pss: int
    printed: str
    returncode: int
    #: (seconds since the start, tree RSS, the command's own process's RSS) at each sample
    trace: list[tuple[float, int, int]] = field(default_factory=list)


def watched_run(command: list[str], pss: bool, cwd: Path | None = None) -> Watched:
    """Run ``command``, sampling its process tree's memory until it ends."""
    with tempfile.TemporaryFile("w+", encoding="utf-8") as log:
        start = time.perf_counter()
        proc = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, text=True, cwd=cwd)
        watched = psutil.Process(proc.pid)
        peak = peak_pss = 0
        next_pss = start
        trace: list[tuple[float, int, int]] = []
        while proc.poll() is None:
            now = time.perf_counter()
            sample_pss = pss and now >= next_pss
            rss, pss_now, own = tree_memory(watched, sample_pss)
            if sample_pss:
                next_pss = now + PSS_EVERY
            peak, peak_pss = max(peak, rss), max(peak_pss, pss_now)
            trace.append((now - start, rss, own))
            time.sleep(RSS_EVERY)
        wall = time.perf_counter() - start
        log.seek(0)
        printed = log.read()
    return Watched(wall, peak, peak_pss, printed, proc.returncode, trace)
