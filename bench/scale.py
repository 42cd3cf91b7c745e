"""Scale: the whole build on corpora of N times the demo (issue 17).

Each corpus copies the demo's PGN files N times, the player and event names of copy k
suffixed with " x{k}" (copy 1 keeps the demo's names), and optionally the years of copy k
shifted by (k - 1) * BENCH_SCALE_SHIFT_YEARS. The moves are the demo's, so every position is
already in the shipped analysis and no engine runs. For each N the benchmark builds cold (a
new cache), rebuilds with nothing changed, then adds one tournament (its analysis made once
beforehand, so engine time is excluded) and rebuilds, then adds the same games again as a
new event played the year after every other game (which moves the as-of date, as a real new
tournament does) and rebuilds. Each build is a `site-builder build`
process; its peak memory is the largest sum of RSS over the whole process tree (workers
included), sampled every 0.1 s; its PSS every second (reading it walks the page tables).
The cold build's and the tournament's peaks are also given by phase, to show where the memory
is held.

Judged by: ms of wall time per game of the cold build at the largest N (target 8 ms), the
peak RSS at the largest N (target 4 GB) and its growth from the second-largest N (target
30%), the no-change rebuild (target 10 s) and the added tournament (target 20 s). Time and
memory are fitted against games (least squares, a + b * games) and extrapolated to 1,000,000
games.

`python -m bench scale` runs N = 1, 3, 10, 30 (hours on 2 cores today);
`BENCH_SCALE_SIZES=1,3 python -m bench scale` runs fewer. Corpora are made in a temporary
folder (BENCH_SCALE_DIR to keep them elsewhere) and deleted at the end, never committed.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple

import numpy as np

from bench.common import CONTENT, ROOT, watched_run

NEW = ROOT / "tests" / "data" / "new-tournament"
_TAG = re.compile(r'^\[(White|Black|Event|Date|EventDate) "(.*)"\]\s*$')
_YEAR = re.compile(r"^(\d{4})")


class PhasePeak(NamedTuple):
    """A phase's largest tree RSS and the build's own process's RSS at that sample."""

    tree: int
    build: int


@dataclass
class Run:
    wall: float
    peak_rss: int
    #: the largest sum of PSS (each shared page counted once across the tree)
    peak_pss: int = 0
    phases: dict[str, float] = field(default_factory=dict)
    files: int = 0
    size: int = 0
    #: phase → its peak, None when no sample fell in it (see :func:`phase_peaks`)
    peaks: dict[str, PhasePeak | None] = field(default_factory=dict)


def _suffixed(line: str, k: int, shift: int) -> str:
    m = _TAG.match(line)
    if m is None:
        return line
    tag, value = m.groups()
    if tag in ("White", "Black", "Event"):
        value = f"{value} x{k}" if value and value != "?" else value
    elif shift:
        y = _YEAR.match(value)
        if y:
            value = f"{int(y.group(1)) + shift:04d}{value[4:]}"
    return f'[{tag} "{value}"]\n'


def _aliases(text: str, k: int) -> str:
    """The alias file with every quoted name suffixed like the copy's PGN."""
    out = []
    for line in text.splitlines(keepends=True):
        if line.lstrip().startswith("#"):
            out.append(line)
        else:
            out.append(re.sub(r'"([^"]+)"', lambda m: f'"{m.group(1)} x{k}"', line))
    return "".join(out)


def make_corpus(root: Path, copies: int, shift_years: int = 0) -> tuple[Path, int]:
    """A content folder of ``copies`` renamed copies of the demo's games; (folder, games)."""
    content = root / "content"
    (content / "games").mkdir(parents=True)
    shutil.copyfile(CONTENT / "site.toml", content / "site.toml")
    (content / "analysis").symlink_to(CONTENT / "analysis")
    demo_aliases = (CONTENT / "aliases.toml").read_text(encoding="utf-8")
    aliases = [demo_aliases]
    games = 0
    for k in range(1, copies + 1):
        if k > 1:
            aliases.append(_aliases(demo_aliases, k))
        for src in sorted((CONTENT / "games").rglob("*")):
            rel = src.relative_to(CONTENT / "games")
            # Copies sit beside the originals, so the settings' globs under games/ (the
            # calibration set, exclusions) take them in as they take the demo's files.
            dst = content / "games" / rel.parent / (f"x{k}-{rel.name}" if k > 1 else rel.name)
            if src.is_dir():
                continue
            dst.parent.mkdir(parents=True, exist_ok=True)
            if src.suffix.lower() != ".pgn":
                shutil.copyfile(src, dst)
                continue
            text = src.read_text(encoding="utf-8", errors="surrogateescape")
            if k > 1:
                shift = (k - 1) * shift_years
                text = "".join(_suffixed(line, k, shift) for line in text.splitlines(True))
            dst.write_text(text, encoding="utf-8", errors="surrogateescape")
            games += sum(1 for line in text.splitlines() if line.startswith("[Event "))
    (content / "aliases.toml").write_text("\n".join(aliases), encoding="utf-8")
    return content, games


def timed_build(content: Path, output: Path, cache: Path) -> Run:
    """One `site-builder build` process: wall time, peak tree RSS, its phases, the output."""
    command = [sys.executable, "-m", "site_builder", "build", "--no-progress"]
    command += ["--content", str(content), "--output", str(output), "--cache", str(cache)]
    ran = watched_run(command, pss=True)
    wall, peak, peak_pss, printed = ran.wall, ran.peak_rss, ran.peak_pss, ran.printed
    if ran.returncode != 0:
        raise RuntimeError(f"build failed ({ran.returncode}):\n{printed[-3000:]}")
    phases = {}
    for line in printed.splitlines():
        if line.startswith("Time: "):
            for part in line[6:].rstrip(".").split(", "):
                if not part.strip():  # a build with nothing to do has no phase
                    continue
                name, secs, _unit = part.rsplit(" ", 2)
                phases[name] = float(secs)
    files = [p for p in output.rglob("*") if p.is_file()]
    size = sum(p.stat().st_size for p in files)
    peaks = phase_peaks(ran.trace, phases, wall)
    return Run(wall, peak, peak_pss, phases, len(files), size, peaks)


def phase_peaks(
    trace: list[tuple[float, int, int]], phases: dict[str, float], wall: float
) -> dict[str, PhasePeak | None]:
    """The largest tree RSS of ``trace`` (seconds since the start, tree RSS, the build's own
    process's RSS) in each phase, with the build's own RSS at that sample: the rest is its
    workers'. The build prints how long each phase took, not when it began: the phases are
    laid end to end, in order, the last ending when the process did. The start-up before the
    first phase falls outside them, and the second or two the process takes to close after
    the last shifts them that much later. A phase too short to hold a sample has None."""
    peaks: dict[str, PhasePeak | None] = {}
    begin = wall - sum(phases.values())
    for name, seconds in phases.items():
        end = begin + seconds
        inside = [PhasePeak(rss, own) for at, rss, own in trace if begin <= at < end]
        peaks[name] = max(inside, key=lambda peak: peak.tree) if inside else None
        begin = end
    return peaks


def _peaks_text(peaks: dict[str, PhasePeak | None]) -> str:
    """Each phase's peak and, in brackets, the build's own process's part of it."""
    return ", ".join(
        f"{name} "
        + ("n/a (no sample)" if at is None else f"{at.tree / 1e9:.2f} ({at.build / 1e9:.2f})")
        for name, at in peaks.items()
    )


def _dirs(content: Path, cache: Path) -> list[str]:
    return ["--content", str(content), "--cache", str(cache)]


def _latest_year(content: Path) -> int:
    """The latest year of a game's Date tag in the corpus."""
    latest = 0
    for pgn in (content / "games").rglob("*.pgn"):
        with pgn.open(encoding="utf-8", errors="replace") as f:
            for line in f:
                if line.startswith('[Date "'):
                    y = _YEAR.match(line[7:])
                    if y:
                        latest = max(latest, int(y.group(1)))
    return latest


def _add_newest(content: Path, year: int) -> None:
    """The added tournament again as a new event played in ``year``, after every other game
    (so the as-of date moves, as it does after a real new tournament)."""
    for pgn in NEW.glob("*.pgn"):
        out = []
        for line in pgn.read_text(encoding="utf-8").splitlines(keepends=True):
            m = _TAG.match(line)
            if m and m.group(1) == "Event":
                line = '[Event "Newest Open"]\n'
            elif m and m.group(1) in ("Date", "EventDate") and _YEAR.match(m.group(2)):
                line = f'[{m.group(1)} "{year:04d}{m.group(2)[4:]}"]\n'
            out.append(line)
        (content / "games" / f"newest-{pgn.name}").write_text("".join(out), encoding="utf-8")


def _analyse_new_tournament(work: Path) -> Path:
    """The added tournament's analysis, made once, as a file every corpus imports."""
    content = work / "new-only"
    (content / "games").mkdir(parents=True)
    shutil.copyfile(CONTENT / "site.toml", content / "site.toml")
    for pgn in NEW.glob("*.pgn"):
        shutil.copyfile(pgn, content / "games" / pgn.name)
    cache = work / "new-cache"
    subprocess.run(
        [sys.executable, "-m", "site_builder", "analyse", "--no-progress", *_dirs(content, cache)],
        check=True,
        capture_output=True,
    )
    out = work / "new-tournament.jsonl.gz"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "site_builder",
            "analysis",
            "export",
            str(out),
            *_dirs(content, cache),
        ],
        check=True,
        capture_output=True,
    )
    return out


def _fit(x: list[float], y: list[float], at: float) -> tuple[float, float, float]:
    """Least squares y = a + b x; (a, b, y at ``at``)."""
    if len(x) < 2:
        return float("nan"), float("nan"), float("nan")
    b, a = np.polyfit(np.array(x, float), np.array(y, float), 1)
    return float(a), float(b), float(a + b * at)


def main() -> dict[str, float]:
    sizes = [int(s) for s in os.environ.get("BENCH_SCALE_SIZES", "1,3,10,30").split(",")]
    shift = int(os.environ.get("BENCH_SCALE_SHIFT_YEARS", "0"))
    base = Path(os.environ.get("BENCH_SCALE_DIR") or tempfile.mkdtemp(prefix="bench-scale-"))
    print(
        "scale: cold build, no-change rebuild, one added tournament (historical) and the same "
        "tournament again after every game (it moves the as-of date) at N x the demo"
    )
    new_analysis = _analyse_new_tournament(base)
    rows = []
    print(
        f"{'N':>3} {'games':>8} {'cold s':>8} {'ms/game':>8} {'RSS GB':>8} {'PSS GB':>7} "
        f"{'no-change s':>11} {'GB':>5} {'+tournament s':>13} {'GB':>5} {'+newest s':>9} "
        f"{'GB':>5} {'files':>8} {'MB':>7}"
    )
    for n in sizes:
        work = base / f"x{n}"
        content, games = make_corpus(work, n, shift)
        output, cache = work / "output", work / "cache"
        cold = timed_build(content, output, cache)
        again = timed_build(content, output, cache)
        for pgn in NEW.glob("*.pgn"):
            shutil.copyfile(pgn, content / "games" / pgn.name)
        analysis = work / "analysis-plus"
        analysis.mkdir()
        for f in (CONTENT / "analysis").glob("*.jsonl.gz"):
            (analysis / f.name).symlink_to(f)
        shutil.copyfile(new_analysis, analysis / "new-tournament.jsonl.gz")
        (content / "analysis").unlink()
        (content / "analysis").symlink_to(analysis)
        added = timed_build(content, output, cache)
        added_s = added.wall - added.phases.get("analysis", 0.0)
        _add_newest(content, _latest_year(content) + 1)
        newest = timed_build(content, output, cache)
        newest_s = newest.wall - newest.phases.get("analysis", 0.0)
        rows.append((n, games, cold, again, added, added_s))
        print(
            f"{n:>3} {games:>8} {cold.wall:>8.1f} {1000 * cold.wall / games:>8.2f} "
            f"{cold.peak_rss / 1e9:>8.2f} {cold.peak_pss / 1e9:>7.2f} "
            f"{again.wall:>11.1f} {again.peak_rss / 1e9:>5.2f} "
            f"{added_s:>13.1f} {added.peak_rss / 1e9:>5.2f} "
            f"{newest_s:>9.1f} {newest.peak_rss / 1e9:>5.2f} {cold.files:>8} "
            f"{cold.size / 1e6:>7.0f}",
            flush=True,
        )
        print("    cold phases: " + ", ".join(f"{k} {v:.1f}" for k, v in cold.phases.items()))
        print(
            "    cold peak RSS by phase, the build's process in brackets (GB): "
            + _peaks_text(cold.peaks)
        )
        print(
            "    + tournament phases: " + ", ".join(f"{k} {v:.1f}" for k, v in added.phases.items())
        )
        print(
            "    + tournament peak RSS by phase, the build's process in brackets (GB): "
            + _peaks_text(added.peaks)
        )
        shutil.rmtree(work, ignore_errors=True)
    game_counts = [float(r[1]) for r in rows]
    _, t_slope, t_million = _fit(game_counts, [r[2].wall for r in rows], 1e6)
    _, m_slope, m_million = _fit(game_counts, [float(r[2].peak_rss) for r in rows], 1e6)
    if len(rows) > 1:
        print(
            f"fit: {1000 * t_slope:.2f} ms and {m_slope / 1e3:.0f} KB per game; at 1,000,000 "
            f"games {t_million / 3600:.1f} h and {m_million / 1e9:.1f} GB"
        )
    else:
        print("fit: needs two sizes or more (BENCH_SCALE_SIZES)")
    result = {"ms_per_game": 1000 * rows[-1][2].wall / rows[-1][1]}
    result["peak_gb"] = rows[-1][2].peak_rss / 1e9
    result["peak_pss_gb"] = rows[-1][2].peak_pss / 1e9
    if len(rows) > 1:
        growth = rows[-1][2].peak_rss / rows[-2][2].peak_rss - 1
        result["rss_growth"] = growth
        print(f"peak RSS growth from {rows[-2][0]}x to {rows[-1][0]}x: {100 * growth:.0f}%")
    print(
        f"judged by: {result['ms_per_game']:.2f} ms per game (target 8), peak "
        f"{result['peak_gb']:.2f} GB (target 4), no-change {rows[-1][3].wall:.1f} s (target 10), "
        f"+ tournament {rows[-1][5]:.1f} s (target 20)"
    )
    if "BENCH_SCALE_DIR" not in os.environ:
        shutil.rmtree(base, ignore_errors=True)
    return result
