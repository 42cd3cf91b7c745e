"""List editions on the demo (issue 20): what the editions add to a cold build, and what a
tournament played after the last edition costs them.

Three builds of a copy of the demo, each a `site-builder build` run in its own process (its
peak memory is the largest sum of RSS over the whole process tree, workers included, sampled
every 0.1 s):

(a) cold, ``[editions] every = ""`` (no editions), a fresh build cache;
(b) cold, the demo's editions (12 quarterly since 2023.01.01), a fresh build cache;
(c) (b)'s caches and output, plus a tournament dated after the last edition (a copy of the
    demo's Tata Steel 2025 renamed and re-dated 2025.12.20: every position is already
    analysed, so no engine runs): the editions recomputed (read from the build cache: the
    ``edition|<date>`` entries written during the build) should be none.

The evaluation cache is a copy of ``.cache/analysis`` when it exists; otherwise each cold
build imports the shipped analysis of ``content/analysis`` (the same work for (a) and (b)).

Judged by: the cost of one edition as a fraction of a full cold build,
((t_on - t_off) / editions) / t_off, and the editions family's own seconds per edition
against t_off.
"""

from __future__ import annotations

import json
import re
import shutil
import sqlite3
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.common import CONTENT, ROOT, watched_run

EVAL_CACHE = ROOT / ".cache" / "analysis"
#: The tournament added after the last edition: a demo event, renamed and re-dated.
SOURCE = "tournaments/20250118-20250202-87th-tata-steel-masters.pgn"
ADDED = "tournaments/20251220-bench-invitational.pgn"
ADDED_DATE = "2025.12.20"


@dataclass
class Run:
    wall: float
    peak_rss: int
    stats: dict[str, Any] = field(default_factory=dict)
    #: edition dates whose build-cache entry this build wrote (computed, not reused)
    computed: list[str] = field(default_factory=list)
    #: every edition date in the build cache
    editions: list[str] = field(default_factory=list)


def _child(content: Path, output: Path, cache: Path, report: Path) -> None:
    """One build in this process; its stats written to ``report`` as JSON."""
    from site_builder.build import build
    from site_builder.config import load_settings
    from site_builder.incremental import code_digest

    code = code_digest()  # as the build reads it: an edit of the package recomputes editions
    stats = build(
        content, output, load_settings(content), cache_dir=cache, progress=False, echo=print
    )
    report.write_text(
        json.dumps(
            {
                "games": stats.games,
                "pages": stats.pages,
                "analysed": stats.analysed,
                "seconds": stats.seconds,
                "family_seconds": stats.family_seconds,
                "recomputed": stats.recomputed,
                "code": code,
            }
        ),
        encoding="utf-8",
    )


def _edition_entries(cache: Path) -> dict[str, float]:
    """edition date → the time its build-cache entry was stored."""
    db = cache.with_name(cache.name + "-build") / "cache.db"
    if not db.is_file():
        return {}
    with sqlite3.connect(db) as con:
        rows = con.execute("SELECT key, store_time FROM Cache WHERE key LIKE 'edition|%'")
        return {str(k).split("|", 1)[1]: float(t) for k, t in rows}


def timed_build(content: Path, output: Path, cache: Path) -> Run:
    """A build in a child process: wall time, peak tree RSS, its stats, editions written."""
    with tempfile.TemporaryDirectory() as tmp:
        report = Path(tmp) / "stats.json"
        command = [sys.executable, "-m", "bench.editions", "--child"]
        command += [str(content), str(output), str(cache), str(report)]
        began = time.time()
        ran = watched_run(command, pss=False, cwd=ROOT)
        wall, peak = ran.wall, ran.peak_rss
        if ran.returncode != 0:
            raise RuntimeError(f"build failed ({ran.returncode}):\n{ran.printed[-3000:]}")
        stats = json.loads(report.read_text(encoding="utf-8"))
    entries = _edition_entries(cache)
    computed = sorted(d for d, t in entries.items() if t >= began)
    return Run(wall, peak, stats, computed, sorted(entries))


def _set_editions(site_toml: Path, every: str) -> None:
    """``[editions] every`` of the copied site.toml set to ``every``."""
    text = site_toml.read_text(encoding="utf-8")
    new, n = re.subn(
        r'(?ms)^(\[editions\].*?^every\s*=\s*)"[^"]*"', rf'\g<1>"{every}"', text, count=1
    )
    if n != 1:
        raise RuntimeError(f"{site_toml}: no [editions] every setting to change")
    site_toml.write_text(new, encoding="utf-8")


def _add_tournament(content: Path) -> int:
    """The demo's Tata Steel 2025 as a new event dated after the last edition; its games."""
    text = (content / "games" / SOURCE).read_text(encoding="utf-8")
    text = re.sub(r'(?m)^\[Event "[^"]*"\]', '[Event "Bench Invitational 2025"]', text)
    text = re.sub(r'(?m)^\[(Date|EventDate) "[^"]*"\]', rf'[\1 "{ADDED_DATE}"]', text)
    (content / "games" / ADDED).write_text(text, encoding="utf-8")
    return text.count("[Event ")


def _fresh(root: Path, name: str, every: str | None) -> tuple[Path, Path, Path]:
    """A copy of the demo content (``every`` set when given) and an evaluation cache."""
    content = root / name / "content"
    shutil.copytree(CONTENT, content)
    if every is not None:
        _set_editions(content / "site.toml", every)
    cache = root / name / "analysis"
    if EVAL_CACHE.is_dir():
        shutil.copytree(EVAL_CACHE, cache)
    return content, root / name / "output", cache


def _family(run: Run) -> float:
    return float(run.stats["family_seconds"].get("editions", 0.0))


def main() -> dict[str, float]:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        off = timed_build(*_fresh(root, "off", ""))
        content, out, cache = _fresh(root, "on", None)
        on = timed_build(content, out, cache)
        added = _add_tournament(content)
        after = timed_build(content, out, cache)

    n = len(on.editions)
    per_edition = (on.wall - off.wall) / n / off.wall if n else float("nan")
    family_share = _family(on) / n / off.wall if n else float("nan")
    warm = "a copy of .cache/analysis" if EVAL_CACHE.is_dir() else "the shipped analysis imported"
    print(
        f"editions: demo ({on.stats['games']} games), evaluations from {warm}, each build "
        "a process with a fresh build cache"
    )
    for label, run in (("(a) cold, editions off", off), ("(b) cold, editions on", on)):
        s = run.stats
        phases = ", ".join(f"{k} {v:.1f} s" for k, v in s["seconds"].items())
        print(
            f"  {label}: {run.wall:.1f} s, {s['pages']} pages, peak RSS (tree) "
            f"{run.peak_rss / 1e9:.2f} GB; {phases}"
        )
    print(
        f"  (b) editions: {n} ({', '.join(on.editions)}); editions family "
        f"{_family(on):.1f} s ({_family(on) / n if n else 0:.2f} s each), "
        f"{len(on.computed)} computed"
    )
    recomputed = "editions" in after.stats["recomputed"]
    print(
        f"  (c) + {added} games dated {ADDED_DATE} (after the last edition): {after.wall:.1f} s, "
        f"{after.stats['analysed']} positions analysed, peak RSS {after.peak_rss / 1e9:.2f} GB; "
        f"editions family {'recomputed' if recomputed else 'reused whole'} in "
        f"{_family(after):.2f} s, editions recomputed: {len(after.computed)} of "
        f"{len(after.editions)}{' (' + ', '.join(after.computed) + ')' if after.computed else ''}"
    )
    if after.stats["code"] != on.stats["code"]:
        print(
            "  WARNING: the package's code changed between (b) and (c) (someone edited "
            "site_builder/): every edition is recomputed by design; run again"
        )
    print(
        f"RATIO one edition / cold build: {100 * per_edition:.2f}% by wall time "
        f"(({on.wall:.1f} - {off.wall:.1f}) s / {n} / {off.wall:.1f} s), "
        f"{100 * family_share:.2f}% by the editions family's own seconds; "
        f"a later tournament recomputed {len(after.computed)} editions"
    )
    return {
        "t_off": off.wall,
        "t_on": on.wall,
        "editions": float(n),
        "per_edition": per_edition,
        "family_share": family_share,
        "rss_off": float(off.peak_rss),
        "rss_on": float(on.peak_rss),
        "recomputed_after": float(len(after.computed)),
    }


if __name__ == "__main__":
    if sys.argv[1:2] == ["--child"]:
        _child(*(Path(a) for a in sys.argv[2:6]))
    else:
        main()
