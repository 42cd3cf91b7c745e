"""Issue 18 item 4: every published number that rests on a default not in METHODS.md names
the setting on the methodology page with the value the build used (from its settings)."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

from site_builder.config import Settings
from site_builder.families import all_families
from site_builder.render.writer import Page, render_pages


def _methodology(settings: Settings, tmp: Path) -> str:
    partials = [f.methodology for f in all_families() if f.methodology]
    page = Page(
        "methodology.html",
        "methodology.html",
        {
            "title": "Methodology",
            "partials": partials,
            "spec": None,
            "settings": settings,
            "facts": {},
        },
    )
    common = {"site": settings.site, "settings": settings, "nav": [], "version": "t"}
    return render_pages([page], tmp, common)["methodology.html"].decode()


def _text(html: str) -> str:
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", html))


def test_settings_not_in_methods_are_named_with_the_values_used(tmp_path: Path) -> None:
    s = Settings()
    odd = dataclasses.replace(
        s,
        quality=dataclasses.replace(s.quality, min_games=7, window_months=19),
        conformance=dataclasses.replace(s.conformance, clip_pawns=8.5, min_moves=173),
        intrinsic=dataclasses.replace(s.intrinsic, window_months=17),
        bayesian=dataclasses.replace(s.bayesian, window_months=23, side_min_turns=27),
    )
    text = _text(_methodology(odd, tmp_path))
    for named in (
        "[quality] min_games = 7",
        "[quality] window_months = 19",
        "[conformance] clip_pawns = 8.5",
        "[conformance] min_moves = 173",
        "[intrinsic] window_months = 17",
        "[bayesian] window_months = 23",
        "[bayesian] side_min_turns = 27",
    ):
        assert named in text, named
    defaults = _text(_methodology(s, tmp_path))
    assert "[quality] min_games = 5" in defaults and "[conformance] clip_pawns = 10.0" in defaults
    assert "[conformance] min_moves = 200" in defaults
    assert "Settings not given by METHODS.md" in defaults


def test_methodology_shows_the_bayesian_top_shift_per_group(tmp_path: Path) -> None:
    """Issue 18 item 2: the Bayesian section shows c̄ per Elo group with and without the
    turns whose played move is outside the top mv lines (from the build's facts)."""
    from site_builder.render.bayesian_pages import TOP_SHIFT_DOWNLOAD
    from site_builder.render.tables import downloads_of

    rows = [
        {"milepost": 2400, "turns": 1000, "outside": 40, "c": 1.2, "c_top": 1.25, "shift": 0.05},
        {"milepost": 2500, "turns": 500, "outside": 25, "c": 1.3, "c_top": 1.32, "shift": 0.02},
    ]
    facts = {
        "bayesian_top_shift": {
            "rows": rows,
            "downloads": downloads_of("data/skill-top-shift", TOP_SHIFT_DOWNLOAD),
            "range": (0.02, 0.05),
        }
    }
    s = Settings()
    partials = [f.methodology for f in all_families() if f.methodology]
    page = Page(
        "methodology.html",
        "methodology.html",
        {"title": "M", "partials": partials, "spec": None, "settings": s, "facts": facts},
    )
    common = {"site": s.site, "settings": s, "nav": [], "version": "t"}
    text = _text(render_pages([page], tmp_path, common)["methodology.html"].decode())
    assert "E2400 1000 40 (4.0%) 1.2000 1.2500 +0.0500" in text
    assert "E2500 500 25 (5.0%) 1.3000 1.3200 +0.0200" in text
    assert "by +0.020 to +0.050" in text
