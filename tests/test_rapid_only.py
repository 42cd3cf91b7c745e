"""A site of rapid games only (nothing for the engine): every family copes with no analysed
move, and a large event gets its crosstable by round."""

from __future__ import annotations

import re
from pathlib import Path

from tests.conftest import build_quietly, make_content, requires_engine

RAPID = Path(__file__).resolve().parent.parent / (
    "content/games/rapid-blitz/20241226-20241228-world-rapid-2024.pgn"
)


@requires_engine
def test_rapid_games_only(tmp_path: Path) -> None:
    text = RAPID.read_text(encoding="utf-8")
    games = re.split(r"\n\s*\n(?=\[Event )", text.replace("\r\n", "\n"))[:60]
    content = make_content(tmp_path, {"rapid.pgn": "\n\n".join(games) + "\n"})
    out = tmp_path / "out"
    stats = build_quietly(content, out, tmp_path / "cache")
    assert stats.games == 60 and stats.positions == 0
    page = next((out / "events").glob("world-rapid-2024*.html")).read_text(encoding="utf-8")
    assert 'id="rounds-table"' in page
    assert re.search(r"<td>\d+[wb](1|½|0)</td>", page)
    assert (out / "champions.html").is_file() and (out / "intrinsic.html").is_file()
