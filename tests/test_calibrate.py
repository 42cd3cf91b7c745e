"""``site-builder calibrate``: the calibration table, printed and written as a page."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from site_builder.cli import main
from tests.conftest import DATA, requires_engine

pytestmark = [requires_engine]


def test_calibrate_prints_and_writes_the_calibration(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out"
    code = main(
        [
            "calibrate",
            "--content",
            str(DATA / "small-site"),
            "--cache",
            str(tmp_path / "cache"),
            "--output",
            str(out),
            "--no-progress",
            "--width",
            "40",
        ]
    )
    assert code == 0
    text = capsys.readouterr().out
    assert "Elo calibration, percentile fit, both players within ±40" in text
    assert "too few turns: 0" in text  # 2000 … 2600: the small site has no such games
    assert "the calibration needs 3" in text
    html = (out / "calibration.html").read_text(encoding="utf-8")
    assert "Regan &amp; Haworth, 2006–2009" in html
    rows = json.loads((out / "data/calibration.json").read_text(encoding="utf-8"))
    by_post = {r["milepost"]: r for r in rows}
    assert by_post[2700]["turns"] > 1000 and by_post[2700]["s"] is not None
    assert by_post[2000]["status"].startswith("too few turns")


def test_calibrate_refuses_a_folder_it_did_not_make(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Like build: `calibrate --output DIR` writes only into a site it made or an empty folder,
    and records what it wrote there."""
    mine = tmp_path / "mydocs"
    mine.mkdir()
    (mine / "thesis.txt").write_text("mine")
    common = ["--content", str(DATA / "small-site"), "--cache", str(tmp_path / "cache")]
    assert main(["calibrate", *common, "--output", str(mine), "--no-progress"]) == 2
    assert "not made by site-builder" in capsys.readouterr().err
    assert sorted(p.name for p in mine.iterdir()) == ["thesis.txt"]
    assert main(["calibrate", *common, "--output", str(DATA / "small-site")]) == 2
    assert "refusing to use" in capsys.readouterr().err
    out = tmp_path / "out"
    assert main(["calibrate", *common, "--output", str(out), "--no-progress"]) == 0
    record = json.loads((out / "site-builder.json").read_text(encoding="utf-8"))
    assert "calibration.html" in record["files"]
