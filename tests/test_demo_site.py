"""The demo site a fresh clone builds from the embedded content/: every position comes from the
shipped analysis, no link is broken, every page of the menus exists, and the methods that need
much data have it (the title matches, the Elo calibration)."""

from __future__ import annotations

import json
import re
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from site_builder.stats import BuildStats
from tests.conftest import build_quietly, requires_engine
from tests.linkcheck import check_site
from tests.test_links import NAV_PAGES

CONTENT = Path(__file__).resolve().parent.parent / "content"

pytestmark = [requires_engine]


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, BuildStats]:
    root = tmp_path_factory.mktemp("demo")
    out = root / "output"
    # A copy of content/, where the last tests add a tournament.
    shutil.copytree(CONTENT, root / "content", ignore=shutil.ignore_patterns(".cache"))
    stats = build_quietly(root / "content", out, root / "cache")
    return out, stats


def _json(out: Path, name: str) -> Any:
    return json.loads((out / "data" / name).read_text(encoding="utf-8"))


def test_the_demo_needs_no_engine_search(demo: tuple[Path, BuildStats]) -> None:
    _, stats = demo
    assert stats.positions > 70_000
    assert stats.analysed == 0 and stats.cache_hits == stats.positions
    assert stats.failed == []


def test_no_broken_link_and_every_menu_page(demo: tuple[Path, BuildStats]) -> None:
    out, _ = demo
    report = check_site(out)
    assert report.pages > 4000 and report.broken == []
    for page in NAV_PAGES:
        assert (out / page).is_file(), page


def test_every_title_match_is_checked(demo: tuple[Path, BuildStats]) -> None:
    out, _ = demo
    folder = CONTENT / "games" / "world-championships"
    matches = _json(out, "wcc.json")
    assert len(matches) == len(list(folder.glob("*.pgn"))) == 10
    predicted = [m for m in matches if None not in (m["conformance"], m["gain"], m["markov"])]
    assert len(predicted) >= 8, [m["match"] for m in matches if m not in predicted]
    mae = {row["predictor"]: row for row in _json(out, "wcc-mae.json")}
    assert all(row["mae"] is not None for row in mae.values()), mae


def test_the_calibration_spans_the_elo_range(demo: tuple[Path, BuildStats]) -> None:
    out, _ = demo
    fitted = [b for b in _json(out, "calibration.json") if b["s"] is not None]
    mileposts = [b["milepost"] for b in fitted]
    assert min(mileposts) <= 2200 and max(mileposts) >= 2700, mileposts
    ipr = [b["ipr"] for b in fitted if b["ipr"] is not None]
    assert len(ipr) >= 4
    assert ipr[-1] - ipr[0] > 300  # rises with the bucket's Elo
    assert len(_json(out, "intrinsic.json")) >= 10  # players with an IPR and its interval


def test_large_events_have_a_crosstable_by_round(demo: tuple[Path, BuildStats]) -> None:
    """More than 20 players (the World Rapid 2024): the crosstable round by round, FIDE style
    ("12w1"), with its CSV and JSON."""
    import re

    out, _ = demo
    page = next((out / "events").glob("*world-rapid*2024*.html"))
    html = page.read_text(encoding="utf-8")
    assert 'id="rounds-table"' in html
    body = html.split('id="rounds-table"', 1)[1].split("</table>", 1)[0]
    cells = re.findall(r"<td>(\d+[wb](?:1|½|0)(?: \d+[wb](?:1|½|0))*)</td>", body)
    assert len(cells) > 100, len(cells)
    slug = page.stem
    rows = _json(out, f"events/{slug}-rounds.json")
    assert len(rows) > 20 and "round_1" in rows[0]


def test_the_demo_publishes_its_quarterly_list_editions(demo: tuple[Path, BuildStats]) -> None:
    """content/site.toml: quarterly since 2023.01.01, and the latest game is of December 2025:
    twelve editions, each linked from every list page, the later ones listing players."""
    from site_builder.updates import LISTS

    out, _ = demo
    dates = [f"{y}-{m:02d}-01" for y in (2023, 2024, 2025) for m in (1, 4, 7, 10)]
    for spec in LISTS:
        page = (out / spec.page).read_text(encoding="utf-8")
        for d in dates:
            assert f'href="editions/{spec.key}-{d}.html"' in page, (spec.page, d)
    for key in ("quality", "elo", "ipr", "skill"):
        assert _json(out, f"editions/{key}-2025-10-01.json"), key
    assert not (out / "editions" / "quality-2026-01-01.html").exists()


# --- a tournament added to the demo (issue 20): run last, they rebuild the demo's folder -----

TATA = "tournaments/20250118-20250202-87th-tata-steel-masters.pgn"


@dataclass
class Added:
    out: Path
    lists: tuple[dict[str, list[dict[str, Any]]], dict[str, list[dict[str, Any]]]]
    editions: tuple[dict[str, bytes], dict[str, bytes]]
    computed: tuple[str, ...]  #: the editions the rebuild computed


@pytest.fixture(scope="module")
def added(demo: tuple[Path, BuildStats]) -> Added:
    """The demo, then a tournament of December 2025 added (Tata Steel 2025's games replayed
    as "Test Masters", dated 2025.12.20: no engine runs) and built into the same folder."""
    from site_builder.analysis.stage import build_cache_dir
    from site_builder.incremental import BuildCache
    from site_builder.memo import Kind, entry
    from tests.test_updates import _read_lists

    out, _ = demo
    root = out.parent

    def editions() -> dict[str, bytes]:
        found = [*out.glob("editions/*.html"), *out.glob("data/editions/*")]
        return {str(p.relative_to(out)): p.read_bytes() for p in sorted(found)}

    before = (_read_lists(out), editions())
    text = (root / "content" / "games" / TATA).read_text(encoding="utf-8")
    text = re.sub(r'\[Date "2025\.0[12]\.\d\d"\]', '[Date "2025.12.20"]', text)
    text = text.replace("87th Tata Steel Masters", "Test Masters")
    (root / "content" / "games" / "tournaments" / "2025-12-test-masters.pgn").write_text(
        text, encoding="utf-8"
    )
    build_quietly(root / "content", out, root / "cache")
    with BuildCache(build_cache_dir(root / "cache")) as bc:
        computed = bc.get(entry(Kind.FAMILY, "editions"))["result"].computed
    return Added(out, (before[0], _read_lists(out)), (before[1], editions()), computed)


def test_the_update_lists_exactly_the_new_tournament(added: Added) -> None:
    history = json.loads((added.out / "updates.json").read_text(encoding="utf-8"))
    u = history["updates"][0]
    assert [e["key"] for e in u["new_events"]] == ["Test Masters 2025"]
    assert len(u["new_games"]) == 91 and u["removed_games"] == [] and u["removed_events"] == []
    assert u["date"] == "2025.12.20"
    # Per list: who entered and left, from the two builds' list downloads.
    changes = {c["key"]: c for c in u["lists"]}
    assert changes, "the new games move some list"
    for key, c in changes.items():
        old = {r["player"]: r["rank"] for r in added.lists[0][key]}
        new = {r["player"]: r["rank"] for r in added.lists[1][key]}
        assert {m["player"] for m in c["entered"]} == new.keys() - old.keys(), key
        assert {m["player"] for m in c["left"]} == old.keys() - new.keys(), key
        # The biggest moves in rank: the five largest rank changes of the players in both.
        places = {p: old[p] - new[p] for p in new if p in old and old[p] != new[p]}
        moved = sorted(places, key=lambda p: (-abs(places[p]), new[p]))
        assert [m["player"] for m in c["by_rank"]] == moved[:5], key
    page = (added.out / u["path"]).read_text(encoding="utf-8")
    assert "Test Masters 2025" in page


def test_the_editions_before_the_tournament_are_reused_byte_for_byte(added: Added) -> None:
    before, after = added.editions
    assert len(before) == 12 * 7 * 3  # 12 editions of 7 lists: a page, a CSV and a JSON
    assert added.computed == ()
    assert after == before


def test_the_feed_validates_with_the_new_update(added: Added) -> None:
    from tests.test_feed import NS, check_feed

    doc = check_feed((added.out / "feed.xml").read_bytes())
    titles = doc.xpath("a:entry/a:title/text()", namespaces=NS)
    assert len(titles) == 1 and "Test Masters 2025" in titles[0]
