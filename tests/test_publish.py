from __future__ import annotations

from pathlib import Path

import pytest

from site_builder.cli import main
from site_builder.publish import publish


def _site(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return root


def test_publish_copies_only_changed_files(tmp_path: Path) -> None:
    out = _site(tmp_path / "out", {"index.html": "a", "players/x.html": "x", "games/g.html": "g"})
    target = tmp_path / "www"
    first = publish(out, target)
    assert sorted(first.copied) == ["games/g.html", "index.html", "players/x.html"]
    stamp = (target / "index.html").stat().st_mtime_ns
    (out / "players/x.html").write_text("x2")
    (out / "games/g.html").unlink()
    second = publish(out, target)
    assert second.copied == ["players/x.html"] and second.unchanged == 1
    assert second.stale == ["games/g.html"]
    assert (target / "index.html").stat().st_mtime_ns == stamp
    third = publish(out, target, delete=True)
    assert third.deleted == ["games/g.html"] and not (target / "games").exists()
    assert (target / "players/x.html").read_text() == "x2"


def test_publish_needs_a_built_site(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert (
        main(["publish", "--output", str(tmp_path / "nothing"), "--to", str(tmp_path / "w")]) == 2
    )
    assert "run `site-builder build` first" in capsys.readouterr().err
