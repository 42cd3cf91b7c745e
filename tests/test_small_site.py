"""The small real site: shipped analysis imported, quality family computed."""

from __future__ import annotations

from tests.conftest import requires_engine


@requires_engine
def test_small_site_has_every_analysed_move(small_site) -> None:  # type: ignore[no-untyped-def]
    moves = small_site.moves
    assert len(small_site.games) == 188
    assert len(small_site.analysed) == 188
    assert len(moves) > 10_000
    assert moves["line_scores"].map(len).max() == 10
    assert (moves["delta"] >= 0).all()
    # Every move's best line is the first of its lines.
    assert (moves["e_best"] == moves["line_scores"].map(lambda s: s[0])).all()


@requires_engine
def test_quality_family_on_real_games(small_site) -> None:  # type: ignore[no-untyped-def]
    from site_builder.families.quality import compute

    res = compute(small_site)
    listed = res.historical[res.historical["status"] == ""]
    assert len(listed) >= 20
    assert listed["index"].between(0, 100).all()
    assert res.fit is not None and res.fit.n >= 20
