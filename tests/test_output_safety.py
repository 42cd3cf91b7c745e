"""Issue 19, items 1, 6, 7 and 8: the build never deletes what it did not write, writes to any
output location (a mount point too), refuses a bad output folder with a message and an exit
code, and the next command, whichever it is, cleans what a failed build left.

Each deletion test puts unrelated files where the build used to delete them and checks that
every one survives.
"""

from __future__ import annotations

import contextlib
import errno
import http.server
import json
import os
import re
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from site_builder.cli import main
from site_builder.render import writer
from site_builder.render.writer import WORK, commit_changes, recover_output
from site_builder.targets import OUTPUT_RECORD, read_record
from tests.conftest import DATA, make_content, requires_engine

pytestmark = requires_engine

FAST = "[analysis]\ndepth = 4\nmultipv = 1\nworkers = 1\n"


def _first_game(name: str) -> str:
    text = (DATA / "fixtures/pgn2tex-examples" / name).read_text(encoding="utf-8")
    return re.split(r"\n\s*\n(?=\[Event )", text.replace("\r\n", "\n"))[0] + "\n"


def _project(root: Path) -> Path:
    project = root / "project"
    make_content(
        project,
        {
            "wc1886.pgn": _first_game("WorldChamp1886.pgn"),
            "tata.pgn": _first_game("tatamast22.pgn"),
        },
        FAST,
    )
    _files(root / "home", {".bashrc": "alias ll='ls -l'", "notes/plan.txt": "plan"})
    return project


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A project folder (the working directory): content/ with two games by four players,
    and the default cache beside it; HOME is a folder beside it with files in it."""
    project = _project(tmp_path)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.chdir(project)
    return project


@pytest.fixture(scope="module")
def _built(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    project = _project(tmp_path_factory.mktemp("built"))
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("HOME", str(project.parent / "home"))
        mp.chdir(project)
        assert _build() == 0  # the default output, cache filled: there is something to lose
    yield project


@pytest.fixture
def built_project(_built: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """:func:`project` after a build into the default output, shared by the tests that only
    check that a command refused and left everything as it was."""
    monkeypatch.setenv("HOME", str(_built.parent / "home"))
    monkeypatch.chdir(_built)
    return _built


def _files(root: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)


def _tree(root: Path) -> dict[str, bytes]:
    return {
        p.relative_to(root).as_posix(): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


def _build(*args: str) -> int:
    return main(["build", "--no-progress", *args])


UNRELATED = {"thesis.txt": "my thesis", "drafts/ch1.md": "chapter one"}


def test_build_refuses_a_folder_it_did_not_make(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Seen: `build --output mydocs` on a folder holding thesis.txt deleted it.
    _files(project / "mydocs", UNRELATED)
    assert _build("--output", "mydocs") == 2
    err = capsys.readouterr().err
    assert "mydocs" in err and "thesis.txt" in err and "Traceback" not in err
    assert _tree(project / "mydocs") == {k: v.encode() for k, v in UNRELATED.items()}
    assert [p.name for p in project.iterdir() if p.name.startswith("mydocs")] == ["mydocs"]


@pytest.mark.parametrize(
    ("output", "why"),
    [
        ("content", "is the content folder"),
        ("content/site", "is inside the content folder"),
        (".", "holds the content folder"),  # seen: deleted content/ and the evaluation cache
        (".cache", "holds the evaluation cache folder"),
        (".cache/analysis-build", "is the build cache folder"),
        ("/", "root of the file system"),
        ("~", "your home folder"),
        ("~/..", "a parent of your home folder"),
    ],
)
def test_build_refuses_content_cache_root_and_home(
    built_project: Path, capsys: pytest.CaptureFixture[str], output: str, why: str
) -> None:
    before = _tree(built_project.parent)
    assert _build("--output", os.path.expanduser(output)) == 2
    err = capsys.readouterr().err
    assert why in err and "refusing" in err and "Traceback" not in err
    assert _tree(built_project.parent) == before  # content, cache, home, output: as they were
    assert not Path("/", WORK).exists()


def test_stale_pages_go_and_nothing_else(project: Path) -> None:
    assert _build("--output", "site") == 0
    site = project / "site"
    record = read_record(site, OUTPUT_RECORD)
    assert record is not None and record == sorted(set(_tree(site)) - {OUTPUT_RECORD})
    tata = [p for p in record if "carlsen" in p]
    assert tata  # the players of the second game have pages
    # Files put into the site by hand, one where a page of a removed player might go, and a
    # record tampered to reach out of the folder or to list itself: none is the build's to delete.
    _files(site, {"notes.txt": "mine", "players/not-a-player.html": "mine"})
    _files(project, {"victim.txt": "outside"})
    data = json.loads((site / OUTPUT_RECORD).read_text())
    data["files"] += ["../victim.txt", "/etc/hostname", OUTPUT_RECORD]
    (site / OUTPUT_RECORD).write_text(json.dumps(data))
    (project / "content/games/tata.pgn").unlink()
    assert _build("--output", "site") == 0
    after = _tree(site)
    assert not [p for p in tata if p in after]  # the stale pages went
    assert after["notes.txt"] == b"mine" and after["players/not-a-player.html"] == b"mine"
    assert (project / "victim.txt").read_text() == "outside"
    assert read_record(site, OUTPUT_RECORD) == sorted(
        set(after) - {OUTPUT_RECORD, "notes.txt", "players/not-a-player.html"}
    )


def test_an_output_folder_of_the_previous_version_is_adopted(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert _build("--output", "old") == 0
    site = project / "old"
    (site / OUTPUT_RECORD).unlink()  # as the previous version left it
    assert _build("--output", "old") == 0  # its files are those the build cache lists
    assert read_record(site, OUTPUT_RECORD) is not None
    (site / OUTPUT_RECORD).unlink()
    _files(site, UNRELATED)  # ... but not with files of someone else in it
    capsys.readouterr()
    assert _build("--output", "old") == 2
    err = capsys.readouterr().err
    assert "thesis.txt" in err and "not made by site-builder" in err
    assert (site / "thesis.txt").read_text() == "my thesis"


def test_what_a_failed_build_left_is_cleaned_by_the_next_command(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert _build("--output", "site") == 0
    site = project / "site"
    site_files = _tree(site)

    def leave_debris() -> None:
        # a render killed in staging (this version), and the previous version's companions
        _files(site / WORK / "staging", {"index.html": "half"})
        _files(project / "site.staging", {"index.html": "half"})
        (project / "site.journal").write_text(
            json.dumps({"new": ["new.html"], "replaced": ["index.html"], "removed": []})
        )
        _files(project / "site.backup", {"index.html": (site / "index.html").read_text()})
        (site / "index.html").write_text("half")
        (site / "new.html").write_text("half")

    def clean() -> bool:
        names = sorted(p.name for p in project.iterdir())
        return _tree(site) == site_files and names == [".cache", "content", "site"]

    served: list[str] = []

    class NoServer:
        def __init__(self, address: Any, handler: Any) -> None:
            self.server_address = address
            served.append(handler.keywords["directory"])

        def __enter__(self) -> NoServer:
            return self

        def __exit__(self, *exc: object) -> None:
            pass

        def serve_forever(self) -> None:
            pass

    monkeypatch.setattr(http.server, "ThreadingHTTPServer", NoServer)
    leave_debris()
    assert main(["serve", "--output", "site"]) == 0 and served
    assert clean()
    leave_debris()
    assert main(["publish", "--output", "site", "--to", "www"]) == 0
    shutil.rmtree(project / "www")
    assert clean()
    leave_debris()
    assert _build("--output", "site") == 0
    assert clean()


# Item 6: any output location --------------------------------------------------------------


@contextlib.contextmanager
def _tmpfs(where: Path) -> Iterator[Path]:
    """A small tmpfs mounted at ``where`` (another file system), or the test is skipped."""
    where.mkdir()
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=64m", "tmpfs", str(where)],
        capture_output=True,
        check=False,
    )
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.decode().strip()}")
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], check=False)


def test_build_into_a_mount_point(project: Path) -> None:
    # Seen: with --output on a mount point every build failed with EXDEV and left staging and
    # journal folders behind.
    with _tmpfs(project / "volume") as volume:
        assert os.stat(volume).st_dev != os.stat(project).st_dev
        assert _build("--output", "volume") == 0
        first = _tree(volume)
        assert "index.html" in first and not (volume / WORK).exists()
        (project / "content/games/tata.pgn").unlink()
        assert _build("--output", "volume") == 0
        assert _tree(volume) != first and not (volume / WORK).exists()
        assert sorted(p.name for p in project.iterdir()) == [".cache", "content", "volume"]


FIRST = {"index.html": "home", "players/a.html": "A", "players/b.html": "B"}
SECOND = {"index.html": "home 2", "players/a.html": "A", "players/c.html": "C"}


def _stage(root: Path, pages: dict[str, str]) -> Path:
    shutil.rmtree(root, ignore_errors=True)
    _files(root, pages)
    return root


def _commit(staging: Path, out: Path, old: dict[str, str], new: dict[str, str]) -> None:
    changed = sorted(p for p in new if old.get(p) != new[p])
    commit_changes(staging, out, changed, sorted(set(old) - set(new)), sorted(new))


def test_a_commit_across_file_systems_copies_file_by_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Staging on one file system, the output on another (a mount inside the output, say):
    every move falls back to a copy under the journal, and a stop halfway rolls back."""
    with _tmpfs(tmp_path / "mnt") as mnt:
        out = mnt / "site"
        _commit(_stage(tmp_path / "s1", FIRST), out, {}, FIRST)
        assert _tree(out) == {**{k: v.encode() for k, v in FIRST.items()}, OUTPUT_RECORD: ANY}
        previous = _tree(out)
        unlink = os.unlink
        calls = 0

        def stop_at_third(path: Any, *a: Any, **k: Any) -> None:
            nonlocal calls
            calls += 1
            if calls == 3:
                raise KeyboardInterrupt("killed")
            unlink(path, *a, **k)

        staging = _stage(tmp_path / "s2", SECOND)
        monkeypatch.setattr(os, "unlink", stop_at_third)
        with pytest.raises(KeyboardInterrupt):
            _commit(staging, out, FIRST, SECOND)
        monkeypatch.setattr(os, "unlink", unlink)
        recover_output(out)
        assert _tree(out) == previous
        _commit(_stage(tmp_path / "s2", SECOND), out, FIRST, SECOND)
        assert {k: v for k, v in _tree(out).items() if k != OUTPUT_RECORD} == {
            k: v.encode() for k, v in SECOND.items()
        }
        assert not (out / WORK).exists()


class _Any:
    def __eq__(self, other: object) -> bool:
        return True


ANY = _Any()


def test_a_rename_refused_across_devices_is_a_copy(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The same fallback with EXDEV simulated for every move out of staging."""
    out, staging = tmp_path / "out", tmp_path / "staging"
    replace = os.replace

    def cross(src: Any, dst: Any) -> None:
        if str(src).startswith(str(staging)):
            raise OSError(errno.EXDEV, "Invalid cross-device link")
        replace(src, dst)

    monkeypatch.setattr(os, "replace", cross)
    _commit(_stage(staging, FIRST), out, {}, FIRST)
    _commit(_stage(staging, SECOND), out, FIRST, SECOND)
    tree = _tree(out)
    assert json.loads(tree.pop(OUTPUT_RECORD))["files"] == sorted(SECOND)
    assert tree == {k: v.encode() for k, v in SECOND.items()}
    assert not any(p.name.endswith(writer.COPYING) for p in out.rglob("*"))


def test_existing_files_lists_files_reached_without_leaving_the_folder(tmp_path: Path) -> None:
    """What a build may replace or remove: files named in the record that are in the folder,
    never through a subfolder replaced by a link to elsewhere (each subfolder checked once)."""
    from site_builder.targets import existing_files

    out, elsewhere = tmp_path / "out", tmp_path / "elsewhere"
    (out / "players").mkdir(parents=True)
    (out / "games").mkdir()
    elsewhere.mkdir()
    for rel in ("index.html", "players/a.html", "games/g1.html"):
        (out / rel).write_text("x")
    (elsewhere / "b.html").write_text("not ours")
    (out / "events").symlink_to(elsewhere, target_is_directory=True)
    (out / "players" / "link.html").symlink_to(out / "index.html")
    (out / "players" / "sub").mkdir()
    names = [
        "index.html",
        "players/a.html",
        "players/link.html",  # a link to a file inside: a file, as os.path.isfile says
        "players/sub",  # a folder, not a file
        "players/gone.html",
        "games/g1.html",
        "events/b.html",  # through a link out of the folder
        "nowhere/x.html",
    ]
    found = existing_files(out, names)
    assert found == {"index.html", "players/a.html", "players/link.html", "games/g1.html"}
    assert found == {
        n
        for n in names
        if os.path.isfile(out / n) and os.path.realpath(out / n).startswith(str(out.resolve()))
    }
