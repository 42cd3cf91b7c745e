"""Incremental rebuilds: unchanged inputs render nothing, unchanged bytes are not rewritten,
and the result equals a build from scratch, byte for byte."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from site_builder.build import build
from site_builder.config import load_settings
from tests.conftest import DATA, make_content, requires_engine

pytestmark = [requires_engine, pytest.mark.engine]

SETTINGS = "[analysis]\ndepth = 6\nmultipv = 10\nworkers = 2\n"


def _split(path: Path) -> list[str]:
    text = path.read_text(encoding="utf-8").replace("\r\n", "\n")
    return [g for g in re.split(r"\n\s*\n(?=\[Event )", text) if g.strip()]


def _tree(root: Path) -> dict[str, bytes]:
    return {
        p.relative_to(root).as_posix(): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


def _stamps(root: Path) -> dict[str, tuple[int, int]]:
    return {
        p.relative_to(root).as_posix(): (p.stat().st_ino, p.stat().st_mtime_ns)
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


def test_added_file_rebuilds_only_what_changed(tmp_path: Path) -> None:
    wc = _split(DATA / "small-site/games/WorldChamp1886.pgn")
    content = make_content(tmp_path / "a", {"wc.pgn": "\n\n".join(wc[:6]) + "\n"}, SETTINGS)
    shutil.copytree(DATA / "small-site/analysis", content / "analysis")
    cache, out = tmp_path / "cache", tmp_path / "out"
    settings = load_settings(content)
    quiet = {"progress": False, "echo": lambda s: None}

    first = build(content, out, settings, cache_dir=cache, **quiet)
    assert first.written is not None and first.written.reused == 0
    assert len(first.written.changed) == first.pages + 3  # and the three assets
    before = _stamps(out)

    # Nothing changed: no metric work, no page written.
    same = build(content, out, settings, cache_dir=cache, **quiet)
    assert same.written is None and same.explanation == ["nothing changed"]
    assert "metrics" not in same.seconds and _stamps(out) == before

    # A new tournament file: only the pages whose bytes change are written.
    (content / "games" / "more.pgn").write_text("\n\n".join(wc[6:9]) + "\n", encoding="utf-8")
    second = build(content, out, settings, cache_dir=cache, **quiet)
    assert second.analysed == 0  # the shipped analysis covers these games
    assert any(line.startswith("new file games/more.pgn: 3 games") for line in second.explanation)
    assert any(
        line == "player Steinitz, William: 3 new games in games/more.pgn"
        for line in second.explanation
    )
    w = second.written
    assert w is not None and w.changed and w.unchanged > 0
    after = _stamps(out)
    for path, stamp in after.items():
        if path in before and path not in w.changed:
            assert stamp == before[path], f"{path} was rewritten though its bytes are the same"
    assert "assets/plotly.min.js" not in w.changed

    # The incremental result equals a build from scratch, byte for byte.
    scratch = tmp_path / "scratch"
    build(content, scratch, settings, cache_dir=tmp_path / "cache2", **quiet)
    assert _tree(out) == _tree(scratch)

    # Removing the file removes its games' pages.
    (content / "games" / "more.pgn").unlink()
    third = build(content, out, settings, cache_dir=cache, **quiet)
    assert third.written is not None and len(third.written.removed) >= 3
    games_left = sorted(p.name for p in (out / "games").glob("*.html"))
    assert len(games_left) == 6
