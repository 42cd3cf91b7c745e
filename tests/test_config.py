from __future__ import annotations

from pathlib import Path

import pytest

from site_builder.config import Settings, load_settings, settings_from_dict
from site_builder.errors import ConfigError


def test_defaults() -> None:
    s = settings_from_dict({})
    assert s.analysis.depth == 10 and s.analysis.multipv == 10 and s.analysis.threads == 1
    assert s.quality.first_move == 12 and s.quality.clip_cp == 300


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"analysis": {"depht": 12}}, r"\[analysis\] unknown setting 'depht'"),
        ({"analysis": {"depth": "deep"}}, r"\[analysis\] depth: expected a whole number"),
        ({"analysis": {"multipv": 0}}, r"\[analysis\] multipv = 0 is outside"),
        (
            {"conformance": {"head_to_head_max": 5000}},
            r"\[conformance\] head_to_head_max = 5000 is outside 2\.\.1000",
        ),
        ({"analysis": {"depth": 10, "nodes": 5000}}, r"exactly one of depth and nodes"),
        ({"analysis": {"classes": ["bullet"]}}, r"classes: unknown class 'bullet'"),
        ({"qualty": {}}, r"unknown section \[qualty\]"),
        ({"site": {"as_of": "yesterday"}}, r"\[site\] as_of"),
        ({"results": {"gm_min": 150, "gm_max": 70}}, r"\[results\] gm_min = 150 exceeds gm_max"),
        ({"bayesian": {"c_min": 2.0, "c_max": 1.0}}, r"\[bayesian\] c_min must be below c_max"),
    ],
)
def test_bad_settings_fail_naming_the_key(data: dict, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        settings_from_dict(data)


def test_bad_toml_names_the_file(tmp_path: Path) -> None:
    (tmp_path / "site.toml").write_text("[analysis\ndepth = 3", encoding="utf-8")
    with pytest.raises(ConfigError, match=r"site\.toml: not valid TOML"):
        load_settings(tmp_path)


def test_digest_changes_with_the_section() -> None:
    a = settings_from_dict({"quality": {"clip_cp": 300}})
    b = settings_from_dict({"quality": {"clip_cp": 250}})
    assert a.digest("analysis") == b.digest("analysis")
    assert a.digest("quality") != b.digest("quality")
    assert isinstance(Settings().digest(), str)


def test_missing_engine_says_how_to_install_one(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from site_builder.cli import main
    from tests.conftest import DATA, make_content

    content = make_content(tmp_path, {"g.pgn": DATA / "small-site/games/WorldChamp1886.pgn"})
    code = main(
        [
            "build",
            "--content",
            str(content),
            "--output",
            str(tmp_path / "out"),
            "--engine",
            str(tmp_path / "no-such-engine"),
            "--no-progress",
        ]
    )
    err = capsys.readouterr().err
    assert code != 0 and "no chess engine at" in err
    assert "sudo apt-get install stockfish" in err and "--engine PATH" in err
    assert not (tmp_path / "out").exists()
