"""Publish copies the built site into a folder and deletes, with --delete, only what an earlier
publish put there (issue 19, item 2). Each deletion test fills the target with unrelated
files first and checks that every one survives."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from site_builder.cli import main
from site_builder.publish import publish
from site_builder.render.writer import WORK
from site_builder.targets import OUTPUT_RECORD, PUBLISH_RECORD, UnsafeFolderError, write_record


def _files(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return root


def _site(root: Path, files: dict[str, str]) -> Path:
    """A built site: the files and the build's record of them (what a build leaves)."""
    for old in set(_tree(root)) - set(files) - {OUTPUT_RECORD}:
        (root / old).unlink()
    _files(root, files)
    write_record(root, OUTPUT_RECORD, files)
    return root


def _tree(root: Path) -> dict[str, str]:
    if not root.exists():
        return {}
    return {
        p.relative_to(root).as_posix(): p.read_text()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


SITE = {"index.html": "a", "players/x.html": "x", "games/g.html": "g"}
#: What a web root holds besides the site (seen deleted by `publish --delete`).
THEIRS = {".git/config": "[core]", ".htaccess": "Options -Indexes", "uploads/report.pdf": "%PDF"}


def test_publish_copies_only_changed_files(tmp_path: Path) -> None:
    out = _site(tmp_path / "out", SITE)
    target = tmp_path / "www"
    first = publish(out, target)
    assert sorted(first.copied) == ["games/g.html", "index.html", "players/x.html"]
    assert OUTPUT_RECORD not in _tree(target)  # the build's record stays in the output
    stamp = (target / "index.html").stat().st_mtime_ns
    _site(out, {"index.html": "a", "players/x.html": "x2"})
    second = publish(out, target)
    assert second.copied == ["players/x.html"] and second.unchanged == 1
    assert second.stale == ["games/g.html"]
    assert (target / "index.html").stat().st_mtime_ns == stamp
    third = publish(out, target, delete=True)
    assert third.deleted == ["games/g.html"] and not (target / "games").exists()
    assert (target / "players/x.html").read_text() == "x2"
    assert json.loads((target / PUBLISH_RECORD).read_text())["files"] == [
        "index.html",
        "players/x.html",
    ]


def test_delete_removes_only_what_publish_put_there(tmp_path: Path) -> None:
    # Seen: `publish --to www --delete` removed www/.git/config, .htaccess, uploads/report.pdf.
    out = _site(tmp_path / "out", SITE)
    www = _files(tmp_path / "www", THEIRS)
    with pytest.raises(UnsafeFolderError, match="--force"):
        publish(out, www, delete=True)  # not empty, and publish did not make it
    assert _tree(www) == THEIRS
    publish(out, www, delete=True, force=www)
    assert _tree(www) == {**THEIRS, **SITE, PUBLISH_RECORD: _tree(www)[PUBLISH_RECORD]}
    _site(out, {"index.html": "b", "players/x.html": "x"})
    stats = publish(out, www, delete=True)  # its own now: no --force needed
    assert stats.deleted == ["games/g.html"] and stats.copied == ["index.html"]
    left = _tree(www)
    assert {k: left[k] for k in THEIRS} == THEIRS  # every unrelated file survives
    assert "games/g.html" not in left and not (www / "games").exists()


def test_files_of_others_are_not_overwritten_without_force(tmp_path: Path) -> None:
    out = _site(tmp_path / "out", SITE)
    www = tmp_path / "www"
    publish(out, www)
    _site(out, {**SITE, "about.html": "ours"})
    _files(www, {"about.html": "theirs"})  # put there by hand since
    with pytest.raises(UnsafeFolderError, match=r"about\.html"):
        publish(out, www)
    assert (www / "about.html").read_text() == "theirs"
    with pytest.raises(UnsafeFolderError, match="does not name"):
        publish(out, www, force=tmp_path / "elsewhere")
    publish(out, www, force=www)
    assert (www / "about.html").read_text() == "ours"


def _project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The working directory: content/, .cache/, a built output/, a home folder with files."""
    project = tmp_path / "project"
    _files(project / "content", {"site.toml": "", "games/a.pgn": "1. e4 e5 *"})
    _files(project / ".cache", {"analysis/cache.db": "evals", "analysis-build/cache.db": "b"})
    _site(project / "output", SITE)
    _files(tmp_path / "home", {".bashrc": "ll", ".local/lib/python3.11/site.py": "py"})
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.chdir(project)
    return project


@pytest.mark.parametrize(
    ("to", "why"),
    [
        ("content", "is the content folder"),  # seen: deleted the games
        ("content/games", "is inside the content folder"),
        ("~", "your home folder"),  # seen: deleted every file in the home folder
        ("/", "root of the file system"),
        ("output", "is the output folder"),
        ("output/mirror", "is inside the output folder"),
        (".", "holds the content folder"),
        (".cache/analysis", "is the evaluation cache folder"),
    ],
)
@pytest.mark.parametrize("force", [False, True])
def test_publish_refuses_protected_folders(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    to: str,
    why: str,
    force: bool,
) -> None:
    project = _project(tmp_path, monkeypatch)
    before = _tree(tmp_path)
    target = str(Path(to).expanduser())
    argv = ["publish", "--to", target, "--delete"] + (["--force", target] if force else [])
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert why in err and "Traceback" not in err
    assert _tree(tmp_path) == before and not (project / PUBLISH_RECORD).exists()


def test_publish_rolls_back_a_half_finished_build_first(tmp_path: Path) -> None:
    out = _site(tmp_path / "out", SITE)
    # A build killed while it moved its files: index.html replaced, new.html added, and the
    # journal and backup that let the next command undo it.
    _files(out / WORK / "backup", {"index.html": "a"})
    (out / WORK / "journal").write_text(
        json.dumps({"new": ["new.html"], "replaced": ["index.html"], "removed": []})
    )
    _files(out, {"index.html": "half", "new.html": "half"})
    publish(out, tmp_path / "www")
    assert {k: v for k, v in _tree(tmp_path / "www").items() if k != PUBLISH_RECORD} == SITE
    assert not (out / WORK).exists() and not (out / "new.html").exists()


def test_publish_needs_a_built_site(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert (
        main(["publish", "--output", str(tmp_path / "nothing"), "--to", str(tmp_path / "w")]) == 2
    )
    assert "run `site-builder build` first" in capsys.readouterr().err
    _files(tmp_path / "old", SITE)  # built by the previous version: no record
    assert main(["publish", "--output", str(tmp_path / "old"), "--to", str(tmp_path / "w")]) == 2
    assert "earlier version" in capsys.readouterr().err
    assert not (tmp_path / "w").exists()
