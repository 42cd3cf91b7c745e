"""Pages of the intrinsic, Bayesian and agreement families on the small test site."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from site_builder.families import bayesian
from site_builder.families import intrinsic as intrinsic_family
from site_builder.metrics import intrinsic as I
from site_builder.render import agreement_pages, bayesian_pages, intrinsic_pages, quality_pages
from site_builder.render.writer import render_pages

FAMILIES = [quality_pages.FAMILY, intrinsic_pages.FAMILY, bayesian_pages.FAMILY]


def _site(small_site, **intrinsic):  # type: ignore[no-untyped-def]
    s = small_site.settings
    settings = dataclasses.replace(
        s, intrinsic=dataclasses.replace(s.intrinsic, bootstrap=200, **intrinsic)
    )
    return dataclasses.replace(
        small_site, settings=settings, state=dataclasses.replace(small_site.state, results={})
    )


def _render(site, tmp: Path) -> dict[str, bytes]:  # type: ignore[no-untyped-def]
    fams = [*FAMILIES, agreement_pages.FAMILY]
    for fam in fams:
        site.state.results[fam.name] = fam.compute(site)
    pages = [p for fam in fams for p in fam.pages(site)]
    common = {"site": site.settings.site, "settings": site.settings, "nav": [], "version": "t"}
    return render_pages(pages, tmp, common)


def _with_lines(real):  # type: ignore[no-untyped-def]
    """``calibrate`` with its buckets fitted and the lines c(Elo), Elo(s) set by hand."""
    lines = (I.Line(0.1, 0.0002, 4), I.Line(3300.0, -2000.0, 4))

    def fake(sp, meta, cfg, method=None, run=I.serial, fits=None, population=None):  # type: ignore[no-untyped-def]
        cal = real(sp, meta, cfg, method, run, fits, population)
        return dataclasses.replace(cal, c_line=lines[0], elo_line=lines[1], status="")

    return fake


#: Buckets the small site's Elo range (2612–2865) can fill.
_BANDS = {
    "milepost_min": 2600,
    "milepost_max": 2850,
    "milepost_step": 50,
    "milepost_width": 40,
    "min_turns": 200,
}


@pytest.fixture(scope="module")
def calibrated(small_site, tmp_path_factory):  # type: ignore[no-untyped-def]
    """The small site with a usable calibration: its Elo range (2612–2865) is too narrow to
    calibrate, so the fitted buckets are kept and the lines are set by hand."""
    with pytest.MonkeyPatch.context() as mp:  # undone even when the build fails
        mp.setattr(I, "calibrate", _with_lines(I.calibrate))
        site = _site(small_site, **_BANDS)
        out = _render(site, tmp_path_factory.mktemp("pages"))
    return site, out


def test_every_ipr_and_skill_carries_its_interval(calibrated) -> None:  # type: ignore[no-untyped-def]
    site, out = calibrated
    res = site.state.results["intrinsic"]
    listed = res.players[res.players["status"] == ""]
    assert len(listed) > 10
    assert (listed["ipr_lo"] <= listed["ipr"]).all() and (listed["ipr"] <= listed["ipr_hi"]).all()
    html = out["intrinsic.html"].decode()
    assert "95% interval" in html and 'class="sortable"' in html and 'data-sort="num"' in html
    assert out["data/intrinsic.csv"].startswith(b"rank,player,ipr,ipr_lo,ipr_hi")
    sk = site.state.results["bayesian"].players
    ok = sk[sk["status"] == ""]
    assert (ok["c_lo"] <= ok["c"]).all() and (ok["c"] <= ok["c_hi"]).all()
    assert "95% region" in out["skill.html"].decode()
    cal = out["calibration.html"].decode()
    assert "Regan &amp; Haworth, 2006–2009" in cal and "too few turns" in cal
    assert "maximum likelihood" in cal and "matching mm and ad" in cal
    groups = out["skill-groups.html"].decode()
    assert "Table II" in groups and "winners" in groups
    agree = out["agreement.html"].decode()
    assert "Spearman" in agree and "Improved Elo: n/a" in agree


def test_player_event_and_game_blocks(calibrated) -> None:  # type: ignore[no-untyped-def]
    site, _ = calibrated
    carlsen = intrinsic_pages.player_sections(intrinsic_pages.player_view(site, "Carlsen, Magnus"))
    assert carlsen and carlsen[0].context["years"]
    assert carlsen[0].context["chart"]["layout"]["title"]["text"].endswith("IPR by year")
    key = next(k for k in site.state.results["intrinsic"].events["event"] if "Tata" in k)
    ev = intrinsic_pages.event_sections(site, key)
    assert ev and ev[0].context["event"]["ipr_lo"] < ev[0].context["event"]["ipr_hi"]
    game = next(g for g in site.games if g.game_id in site.analysed)
    rows = bayesian_pages.game_sections(bayesian_pages.game_view(site, game))[0].context["rows"]
    assert len(rows) == 2 and all(r["c_lo"] <= r["c"] <= r["c_hi"] for r in rows)


def test_identical_inputs_give_identical_bytes(calibrated, tmp_path) -> None:  # type: ignore[no-untyped-def]
    site, out = calibrated
    again = dataclasses.replace(
        site, state=dataclasses.replace(site.state, results=dict(site.state.results))
    )
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(I, "calibrate", _with_lines(I.calibrate))
        again.state.results["intrinsic"] = intrinsic_family.compute(again)
    pages = intrinsic_pages.pages(again)
    common = {"site": site.settings.site, "settings": site.settings, "nav": [], "version": "t"}
    second = render_pages(pages, tmp_path, common)
    for path in ("intrinsic.html", "calibration.html", "data/intrinsic.json"):
        assert second[path] == out[path], path


def test_uncalibrated_site_says_why(small_site, tmp_path) -> None:  # type: ignore[no-untyped-def]
    site = _site(small_site, min_turns=10**7)
    site.state.results["intrinsic"] = intrinsic_family.compute(site)
    common = {"site": site.settings.site, "settings": site.settings, "nav": [], "version": "t"}
    out = render_pages(intrinsic_pages.pages(site), tmp_path, common)
    html = out["intrinsic.html"].decode()
    assert "n/a: the Elo calibration could not be made" in html
    cal = out["calibration.html"].decode()
    assert "too few turns" in cal and "milepost bucket(s) with at least" in cal
    assert intrinsic_pages.player_sections(intrinsic_pages.player_view(site, "Carlsen, Magnus"))[
        0
    ].context["summary"]["status"]


def test_calibration_games_fix_the_reference_set(small_site) -> None:  # type: ignore[no-untyped-def]
    """[intrinsic] calibration_games: the buckets and Elo groups hold only those files' games;
    every player is still rated; a list that matches nothing says so."""
    bands = {"milepost_min": 2600, "milepost_max": 2850, "milepost_step": 50, "min_turns": 200}
    every = _site(small_site, milepost_width=40, **bands)
    tata = _site(small_site, milepost_width=40, calibration_games=("tata*.pgn",), **bands)
    none = _site(small_site, milepost_width=40, calibration_games=("nothing/*",), **bands)
    in_tata = {g.game_id for g in small_site.games if "tatamast22" in g.source}
    assert in_tata and tata.calibration_game_ids == in_tata
    assert every.calibration_game_ids == {g.game_id for g in small_site.games}
    res = {name: intrinsic_family.compute(s) for name, s in (("every", every), ("tata", tata))}
    turns = {name: sum(b.turns for b in r.calibration.buckets) for name, r in res.items()}
    games = {name: sum(b.games for b in r.calibration.buckets) for name, r in res.items()}
    assert 0 < turns["tata"] < turns["every"]
    assert games["tata"] <= len(in_tata) and games["tata"] < games["every"]
    # Players of the other files keep their rows (rated on the same scale or n/a with why).
    assert list(res["tata"].players["player"]) == list(res["every"].players["player"])
    for s, r in ((tata, res["tata"]), (every, res["every"])):
        s.state.results["intrinsic"] = r
    skill = {n: bayesian.compute(s) for n, s in (("every", every), ("tata", tata))}
    assert skill["tata"].groups["turns"].sum() < skill["every"].groups["turns"].sum()
    nothing = intrinsic_family.compute(none)
    assert "calibration_games" in nothing.calibration.status
    assert (nothing.players["status"].str.startswith("n/a")).all()


def test_a_bucket_fitted_on_a_sample_says_so(small_site, tmp_path) -> None:  # type: ignore[no-untyped-def]
    """[intrinsic] calibration_max_turns below a bucket's turns: the page, the download and
    the text of ``site-builder calibrate`` give the fitted turns beside the bucket's."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(I, "calibrate", _with_lines(I.calibrate))
        site = _site(small_site, calibration_max_turns=300, **_BANDS)
        res = intrinsic_family.compute_calibration(site)
    sampled = [b for b in res.calibration.buckets if 0 < b.fitted < b.turns]
    assert sampled and all(300 <= b.fitted < b.turns for b in sampled)
    site.state.results["intrinsic"] = res
    common = {"site": site.settings.site, "settings": site.settings, "nav": [], "version": "t"}
    out = render_pages(intrinsic_pages.pages(site), tmp_path, common)
    cal = out["calibration.html"].decode()
    b = sampled[0]
    assert f'data-value="{b.turns}">{b.turns} ({b.fitted})</td>' in cal
    assert "A bucket with more than\n300 turns is fitted on a sample of its games" in cal
    assert "weights = fitted turns" in cal
    csv = out["data/calibration.csv"].decode().splitlines()
    assert csv[0].startswith("milepost,games,turns,fitted,")
    assert f"{b.milepost},{b.games},{b.turns},{b.fitted}," in "\n".join(csv)
    text = "\n".join(intrinsic_pages.calibration_text(res, site.settings))
    assert f"{b.milepost} ({b.fitted} of {b.turns} turns)" in text
