"""The conformance family on the small real site (188 games, depth-6 analysis)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from tests.conftest import requires_engine


@requires_engine
def test_family_on_real_games(small_site, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    from site_builder.families import conformance
    from site_builder.render import champions_pages
    from site_builder.render.core_pages import player_page
    from site_builder.render.writer import render_pages

    res = conformance.compute(small_site)
    small_site.state.results["conformance"] = res
    # the 1886 title match is found by its event name and says why it is not predicted
    (match,) = res.wcc
    assert (match["player_a"], match["year"], match["games"]) == ("Steinitz, William", 1886, 20)
    assert match["markov"] is None and "in 1885" in match["markov_note"]
    assert match["elo_note"] == "n/a: no Elo tags"
    # no world-championships/ folder here: the event-name match counts, and says so
    (found,) = res.titles.matches
    assert found.found_by == "event name" and res.titles.fragments == []
    assert f"the content holds {len(found.games)} games of this match" in found.note
    # game predictor over every analysed game with a result
    assert {c.key for c in res.curves} >= {"raw", "gb", "ponderated", "seed"}
    assert res.curves[0].games >= 180 and res.fit is not None
    # head-to-head: symmetric by construction
    h = res.h2h
    assert len(h.keys) >= 25
    assert np.allclose(h.markov + h.markov.T, 1.0)
    assert np.allclose(h.gain + h.gain.T, 1.0)
    assert res.best["best"].sum() == len({k[0] for k in h.keys})
    # complexity per player, with the groups
    assert {"All", "Title-match players", "Others"} <= set(res.complexity["player"])
    pages = champions_pages.pages(small_site)
    made = player_page(small_site, "Steinitz, William", [], [champions_pages.FAMILY])
    pages += made if isinstance(made, list) else [made]
    common = {
        "site": small_site.settings.site,
        "settings": small_site.settings,
        "nav": [],
        "version": "test",
    }
    out = render_pages(pages, tmp_path, common)
    for page in (
        "champions.html",
        "predictors.html",
        "headtohead.html",
        "wcc.html",
        "complexity.html",
    ):
        assert b"n/a" in out[page] or page != "wcc.html"
        assert b'id="main"' in out[page]
    player = out[small_site.player_path("Steinitz, William")]
    assert b'data-plot="markov-matrix"' in player
    assert b'data-plot="conformance-cumulative"' in player
    assert b'data-plot="strength-0"' in out["champions.html"]
    assert b'data-plot="strength-03"' in out["champions.html"]
    assert b'data-plot="rho-x"' in out["predictors.html"]
    assert b'data-plot="best-years"' in out["headtohead.html"]
