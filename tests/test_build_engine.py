"""End to end with the real Stockfish at a low limit: PGN → engine → cache → pages."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from site_builder.build import build
from site_builder.config import load_settings
from tests.conftest import make_content, requires_engine

pytestmark = [requires_engine, pytest.mark.engine]

FAST = "[analysis]\ndepth = 6\nmultipv = 3\nworkers = 2\n"


def _first_games(src: Path, n: int) -> str:
    text = src.read_text(encoding="utf-8").replace("\r\n", "\n")
    parts = re.split(r"\n\s*\n(?=\[Event )", text)
    return "\n\n".join(parts[:n]) + "\n"


@pytest.fixture(scope="module")
def built(
    tmp_path_factory: pytest.TempPathFactory,
) -> dict:
    data = Path(__file__).parent / "data"
    root = tmp_path_factory.mktemp("site")
    content = make_content(
        root,
        {
            "wc1886.pgn": _first_games(data / "fixtures/pgn2tex-examples/WorldChamp1886.pgn", 3),
            "broken/broken-moves.pgn": data / "broken/broken-moves.pgn",
            "broken/latin1.pgn": data / "broken/latin1.pgn",
        },
        FAST,
        aliases=data / "broken/aliases.toml",
    )
    settings = load_settings(content)
    out = root / "output"
    first = build(
        content, out, settings, cache_dir=root / "cache", progress=False, echo=lambda s: None
    )
    pages_first = {
        p.relative_to(out).as_posix(): p.read_bytes() for p in sorted(out.rglob("*")) if p.is_file()
    }
    # A second build into another folder: the same caches, so nothing is analysed or read
    # again (into the same folder, the build sees that nothing changed before reading a game).
    out2 = root / "output2"
    second = build(
        content, out2, settings, cache_dir=root / "cache", progress=False, echo=lambda s: None
    )
    pages_second = {
        p.relative_to(out2).as_posix(): p.read_bytes()
        for p in sorted(out2.rglob("*"))
        if p.is_file()
    }
    return {
        "root": root,
        "out": out,
        "first": first,
        "second": second,
        "pages_first": pages_first,
        "pages_second": pages_second,
    }


def test_first_build_analyses_every_needed_position(built: dict) -> None:
    first = built["first"]
    # 3 games + the good game of broken-moves.pgn. Counted once each: broken-moves.pgn's
    # copy of game 1, and latin1.pgn's game 3 with "Hérmann" (the alias table maps it back).
    assert first.games == 4
    assert first.problems["duplicate"] == 2
    assert first.positions > 200
    assert first.analysed == first.positions
    assert first.cache_hits == 0 and first.reused == 0
    assert first.failed == []


def test_second_build_makes_zero_engine_calls(built: dict) -> None:
    second = built["second"]
    assert second.analysed == 0
    assert second.searches == 0
    # Every game's move rows come from the build cache: no evaluation is read again.
    assert second.reused == built["first"].positions and second.cache_hits == 0


def test_rebuild_is_byte_identical(built: dict) -> None:
    assert built["pages_first"] == built["pages_second"]


def test_pages_exist(built: dict) -> None:
    pages = built["pages_first"]
    for path in [
        "index.html",
        "players.html",
        "methodology.html",
        "report.html",
        "assets/plotly.min.js",
        "assets/site.js",
        "assets/site.css",
        "players/steinitz-william.html",
        "players/zukertort-johannes-hermann.html",
    ]:
        assert path in pages, path
    games = [p for p in pages if p.startswith("games/")]
    assert len(games) == 4


def test_report_names_each_broken_game(built: dict) -> None:
    report = built["pages_first"]["report.html"].decode()
    assert "games/broken/broken-moves.pgn" in report
    assert "illegal san" in report
    assert "set-up position" in report
    assert "variant &#39;Atomic&#39; is not standard chess" in report
    assert "read as Latin-1" in report


def test_game_page_has_engine_analysis(built: dict) -> None:
    pages = built["pages_first"]
    game = next(v.decode() for k, v in sorted(pages.items()) if k.startswith("games/"))
    assert 'data-plot="eval-graph"' in game
    assert "Engine best" in game
    assert "not analysed" in game  # moves before move 9


def test_charts_are_valid_plotly_and_escaped(built: dict) -> None:
    import plotly.graph_objects as go

    found = 0
    for path, data in built["pages_first"].items():
        if not path.endswith(".html"):
            continue
        for blob in re.findall(
            r'<script type="application/json" data-plot="[^"]+">(.*?)</script>',
            data.decode(),
            flags=re.S,
        ):
            assert "<" not in blob
            fig = json.loads(blob)
            go.Figure(fig)  # raises on an invalid figure
            found += 1
    assert found >= 5


def test_no_external_requests_in_pages(built: dict) -> None:
    for path, data in built["pages_first"].items():
        if path.endswith(".html"):
            text = data.decode()
            assert not re.search(r'(src|href)="(https?:)?//', text), path
