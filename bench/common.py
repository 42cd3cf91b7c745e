"""Shared helpers: real positions from the demo content, a machine description."""

from __future__ import annotations

import os
import platform
import subprocess
from pathlib import Path

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
