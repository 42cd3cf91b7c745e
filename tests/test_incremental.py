"""Incremental rebuilds: unchanged inputs render nothing, unchanged bytes are not rewritten,
and the result equals a build from scratch, byte for byte."""

from __future__ import annotations

import json
import os
import re
import shutil
from pathlib import Path

import pandas as pd
import pytest

from site_builder.analysis.cache import EvalCache
from site_builder.analysis.stage import build_cache_dir
from site_builder.build import build
from site_builder.config import load_settings
from site_builder.store import MoveStore
from site_builder.targets import OUTPUT_RECORD
from site_builder.updates import is_history
from tests.conftest import DATA, make_content, requires_engine

pytestmark = [requires_engine, pytest.mark.engine]

SETTINGS = "[analysis]\ndepth = 6\nmultipv = 10\nworkers = 2\n"


def _split(path: Path) -> list[str]:
    text = path.read_text(encoding="utf-8").replace("\r\n", "\n")
    return [g for g in re.split(r"\n\s*\n(?=\[Event )", text) if g.strip()]


def _tree(root: Path) -> dict[str, bytes]:
    """Every file but the What's new history, which depends on the folder's earlier builds by
    design (tests/test_updates.py checks it), nor its pages in the output record."""
    found = {}
    for p in sorted(root.rglob("*")):
        path = p.relative_to(root).as_posix()
        if not p.is_file() or is_history(path):
            continue
        data = p.read_bytes()
        if path == OUTPUT_RECORD:
            record = json.loads(data)
            record["files"] = [f for f in record["files"] if not is_history(f)]
            data = json.dumps(record).encode()
        found[path] = data
    return found


def _stamps(root: Path) -> dict[str, tuple[int, int]]:
    return {
        p.relative_to(root).as_posix(): (p.stat().st_ino, p.stat().st_mtime_ns)
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


def test_added_file_rebuilds_only_what_changed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    wc = _split(DATA / "small-site/games/WorldChamp1886.pgn")
    content = make_content(tmp_path / "a", {"wc.pgn": "\n\n".join(wc[:6]) + "\n"}, SETTINGS)
    shutil.copytree(DATA / "small-site/analysis", content / "analysis")
    cache, out = tmp_path / "cache", tmp_path / "out"
    settings = load_settings(content)
    quiet = {"progress": False, "echo": lambda s: None}

    first = build(content, out, settings, cache_dir=cache, **quiet)
    assert first.written is not None and first.written.reused == 0
    assert first.written.unchanged == 0 and len(first.written.changed) > first.pages
    before = _stamps(out)

    # Nothing changed: no metric work, no page written.
    same = build(content, out, settings, cache_dir=cache, **quiet)
    assert same.written is None and same.explanation == ["nothing changed"]
    assert "metrics" not in same.seconds and _stamps(out) == before
    # ... known before a game is read: the files' digests, settings, code, templates, engine
    # and evaluation cache equal the last build's.
    assert "ingest" not in same.seconds
    # A file touched but not changed, or new evaluations: the games are read, and nothing
    # changed still.
    os.utime(content / "games" / "wc.pgn", (1, 1))
    with EvalCache(cache) as evaluations:
        evaluations.put_many({"unrelated-entry": {"note": "from another tool"}})
    touched = build(content, out, settings, cache_dir=cache, **quiet)
    assert touched.explanation == ["nothing changed"] and "ingest" in touched.seconds
    assert _stamps(out) == before
    assert "ingest" not in build(content, out, settings, cache_dir=cache, **quiet).seconds

    # A new tournament file: only the pages whose bytes change are written.
    from_files: list[str] = []
    rows_of = MoveStore.rows_of

    def counted(self: MoveStore, part: int, games: set[str]) -> object:
        from_files.extend(games)
        return rows_of(self, part, games)

    monkeypatch.setattr(MoveStore, "rows_of", counted)
    (content / "games" / "more.pgn").write_text("\n\n".join(wc[6:9]) + "\n", encoding="utf-8")
    second = build(content, out, settings, cache_dir=cache, **quiet)
    assert second.analysed == 0  # the shipped analysis covers these games
    assert any(line.startswith("new file games/more.pgn: 3 games") for line in second.explanation)
    assert any(
        line == "player Steinitz, William: 3 new games in games/more.pgn"
        for line in second.explanation
    )
    w = second.written
    assert w is not None and w.changed and w.unchanged > 0
    after = _stamps(out)
    for path, stamp in after.items():
        if path in before and path not in w.changed:
            assert stamp == before[path], f"{path} was rewritten though its bytes are the same"
    assert "assets/plotly.min.js" not in w.changed
    # Steinitz's partition was rewritten: his six earlier games' rows came from its file.
    assert len(set(from_files)) == 6

    # The incremental result equals a build from scratch, byte for byte.
    scratch = tmp_path / "scratch"
    build(content, scratch, settings, cache_dir=tmp_path / "cache2", **quiet)
    assert _tree(out) == _tree(scratch)
    # So does its move store: the rewritten partitions kept their unchanged games' rows
    # from their files (their footers name the games), and took only the new games' rows.
    kept, fresh = _same_move_stores(cache, tmp_path / "cache2", settings.build.partitions)
    for part in kept.parts():
        assert set(kept.members(part)) == set(fresh.members(part)) != set()

    # Removing the file removes its games' pages.
    (content / "games" / "more.pgn").unlink()
    third = build(content, out, settings, cache_dir=cache, **quiet)
    assert third.written is not None and len(third.written.removed) >= 3
    games_left = sorted(p.name for p in (out / "games").glob("*.html"))
    assert len(games_left) == 6


def _same_move_stores(a: Path, b: Path, partitions: int) -> tuple[MoveStore, MoveStore]:
    """The move stores of two caches, checked equal partition for partition."""
    first, second = (MoveStore(build_cache_dir(c) / "moves", partitions) for c in (a, b))
    assert first.parts() == second.parts()
    for part in first.parts():
        pd.testing.assert_frame_equal(first.read(part), second.read(part))
    return first, second


def test_a_damaged_partition_file_is_made_again_from_the_build_cache(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A partition file whose footer reads but whose rows do not: the build says so and
    makes the changed partitions from the build cache; no game is lost."""
    wc = _split(DATA / "small-site/games/WorldChamp1886.pgn")
    content = make_content(tmp_path / "a", {"wc.pgn": "\n\n".join(wc[:6]) + "\n"}, SETTINGS)
    shutil.copytree(DATA / "small-site/analysis", content / "analysis")
    cache, out = tmp_path / "cache", tmp_path / "out"
    settings = load_settings(content)
    quiet = {"progress": False, "echo": lambda s: None}
    build(content, out, settings, cache_dir=cache, **quiet)
    store = MoveStore(build_cache_dir(cache) / "moves", settings.build.partitions)
    assert store.parts()
    for part in store.parts():  # the data pages zeroed, the footer (and its games) kept
        path = store.path(part, store.keys[part])
        data = bytearray(path.read_bytes())
        data[4:200] = bytes(196)
        path.write_bytes(bytes(data))
        assert store.members(part)
    capsys.readouterr()

    (content / "games" / "more.pgn").write_text("\n\n".join(wc[6:9]) + "\n", encoding="utf-8")
    build(content, out, settings, cache_dir=cache, **quiet)
    assert "cannot be read" in capsys.readouterr().err
    scratch = tmp_path / "scratch"
    build(content, scratch, settings, cache_dir=tmp_path / "cache2", **quiet)
    assert _tree(out) == _tree(scratch)
    _same_move_stores(cache, tmp_path / "cache2", settings.build.partitions)


def test_settings_changes_invalidate_the_right_layer(tmp_path: Path) -> None:
    wc = _split(DATA / "small-site/games/WorldChamp1886.pgn")
    content = make_content(tmp_path / "a", {"wc.pgn": "\n\n".join(wc[:4]) + "\n"}, SETTINGS)
    shutil.copytree(DATA / "small-site/analysis", content / "analysis")
    cache, out = tmp_path / "cache", tmp_path / "out"
    quiet = {"progress": False, "echo": lambda s: None}
    first = build(content, out, load_settings(content), cache_dir=cache, **quiet)
    assert "quality" in first.recomputed and "intrinsic" in first.recomputed

    # A metric parameter: that metric (and what reads it) only.
    (content / "site.toml").write_text(SETTINGS + "\n[quality]\nclip_cp = 250\n")
    second = build(content, out, load_settings(content), cache_dir=cache, **quiet)
    assert "quality" in second.recomputed
    assert not {"intrinsic", "bayesian", "conformance"} & set(second.recomputed)
    assert "settings [quality] changed: the metrics that use it are recomputed" in (
        second.explanation
    )
    assert second.analysed == 0

    # A template: re-render only.
    import site_builder.build as build_module
    import site_builder.render.driver as render_driver

    real = build_module.templates_digest
    try:  # the manifest's digest and the render driver's
        build_module.templates_digest = lambda: "edited"  # type: ignore[assignment]
        render_driver.templates_digest = lambda: "edited"  # type: ignore[assignment]
        fourth = build(content, out, load_settings(content), cache_dir=cache, **quiet)
    finally:
        build_module.templates_digest = real  # type: ignore[assignment]
        render_driver.templates_digest = real  # type: ignore[assignment]
    assert fourth.recomputed == []
    assert "templates changed: pages are re-rendered" in fourth.explanation
    assert fourth.written is not None and fourth.written.rendered > 0

    # New analysis settings: re-analysis under a new key; the old entries stay cached.
    (content / "site.toml").write_text(SETTINGS.replace("depth = 6", "depth = 5"))
    third = build(content, out, load_settings(content), cache_dir=cache, **quiet)
    assert third.analysed == third.positions > 0
    back = build(
        content,
        tmp_path / "out-back",
        load_settings(content) if False else _settings(content, SETTINGS),
        cache_dir=cache,
        **quiet,
    )
    assert back.analysed == 0  # depth 6 entries are still in the cache


def _settings(content: Path, text: str):  # type: ignore[no-untyped-def]
    (content / "site.toml").write_text(text)
    return load_settings(content)


def test_scenario_add_a_real_tournament(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The design card's promise on the small real site: build, add a tournament, rebuild.

    Only the new tournament's uncached positions are analysed, only its players' numbers are
    recomputed per player, only the pages whose bytes change are written, and the result
    equals a build from scratch, byte for byte.
    """
    from site_builder.analysis.cache import EvalCache
    from site_builder.analysis.positions import analysed_plies, game_plies, missing_tasks
    from site_builder.analysis.spec import engine_identity
    from site_builder.analysis.stage import build_cache_dir, identify_engine, make_spec
    from site_builder.ingest.names import AliasTable
    from site_builder.ingest.pgn import read_file
    from tests.conftest import STOCKFISH

    content = tmp_path / "content"
    shutil.copytree(DATA / "small-site", content)
    # The Elo calibration stays on the first build's files, as in the demo.
    with (content / "site.toml").open("a", encoding="utf-8") as f:
        f.write('\n[intrinsic]\ncalibration_games = ["G*.pgn", "W*.pgn", "t*.pgn"]\n')
    cache, out = tmp_path / "cache", tmp_path / "out"
    settings = load_settings(content)
    quiet = {"progress": False, "echo": lambda s: None}
    build(content, out, settings, cache_dir=cache, **quiet)
    before = _stamps(out)
    first_tree = _tree(out)

    new = DATA / "new-tournament/20140827-20140906-sinquefield-cup-2nd.pgn"
    shutil.copyfile(new, content / "games" / new.name)
    games, _ = read_file(new, new.name, AliasTable({}), settings.time_control)
    assert STOCKFISH is not None
    spec = make_spec(settings, identify_engine(STOCKFISH), engine_identity(STOCKFISH))
    first = settings.analysis.first_move
    wanted = [
        (p.position, p.played) for g in games for p in analysed_plies(game_plies(g, first), first)
    ]
    with EvalCache(cache) as c:
        uncached = {pos for pos, _ in wanted if c.lookup(spec, pos) is None}
        tasks, _hits = missing_tasks(wanted, spec, c)
    # Positions whose lines are new, plus cached ones whose played move needs its own search.
    assert len(uncached) > 1000 and len(tasks) >= len(uncached)

    # Page sets (a player's pages) are made anyway and checked against their unchanged keys.
    from site_builder.render.output import CHECK_KEYS

    monkeypatch.setenv(CHECK_KEYS, "1")
    again = build(content, out, settings, cache_dir=cache, **quiet)
    assert again.analysed == len(tasks)
    # Sequential ratings resume at the new tournament's month (August 2014), not from scratch.
    from site_builder.ingest.pgn import read_collection
    from site_builder.metrics import elo

    old_games = read_collection(
        DATA / "small-site" / "games", AliasTable({}), settings.time_control
    ).games
    earlier = [g for g in elo.rated_games(old_games, "classical") if g.months < 2014 * 12 + 7]
    first, total = again.elo_resumed["classical"]
    assert 0 < first == len(earlier) < total
    players = {g.white for g in games} | {g.black for g in games}
    # Per-partition work: only the partitions of the tournament's players are computed again.
    from site_builder.store import partition_of

    touched = {partition_of(p, settings.build.partitions) for p in players}
    assert len(touched) < settings.build.partitions
    for work in ("quality.partition_quality", "conformance.partition_share"):
        assert again.partitions[f"site_builder.families.{work}"] == len(touched), work
    # Intrinsic ratings and Bayesian skill: only the new tournament's players (the calibration
    # is unchanged), and only the groups (player-years, events) that hold new games.
    # A player whose rating window (their last two years) holds no new game keeps it.
    old_players = {n for g in old_games for n in (g.white, g.black)}
    for family in ("intrinsic", "bayesian"):
        assert players - old_players <= again.recomputed_players[family] <= players, family
    for kind, counts in again.group_counts.items():
        assert counts["reused"] > 0, kind
    assert again.group_counts["intrinsic-event"]["computed"] == 1 + len(players)
    w = again.written
    assert w is not None
    after = _stamps(out)
    assert {f"games/{g.game_id}.html" for g in games} <= set(w.changed)
    for path, stamp in after.items():
        if path in before and path not in w.changed:
            assert stamp == before[path], path
    untouched = [p for p in before if p in after and p not in w.changed]
    assert len(untouched) > 100  # most pages of the 188 old games are not rewritten

    # One game between two newcomers (unrated, in no list): the other players' pages are not
    # even made, and the check mode above makes them anyway to prove their keys complete.
    newcomers = _split(new)[0].replace("Aronian, Levon", "Newcomer, Ann")
    newcomers = newcomers.replace("Topalov, Veselin", "Newcomer, Bob")
    newcomers = re.sub(r'\[(White|Black)Elo "\d+"\]\n', "", newcomers)
    newcomers = newcomers.replace("Sinquefield Cup 2nd", "Newcomers")
    (content / "games" / "newcomers.pgn").write_text(newcomers + "\n", encoding="utf-8")
    fourth = build(content, out, settings, cache_dir=cache, **quiet)
    assert fourth.analysed == 0 and fourth.written is not None
    # Most players' conformance blocks read the all-players Markov blend and head-to-head
    # scores, which every new game moves; the others' pages are linked unmade.
    assert fourth.written.sets_reused > 0

    scratch = tmp_path / "scratch"
    shutil.rmtree(build_cache_dir(cache))  # a from-scratch build: no build cache, same evaluations
    fresh = build(content, scratch, settings, cache_dir=cache, **quiet)
    assert fresh.analysed == 0
    assert fresh.elo_resumed["classical"] == (0, total + 1)  # with the newcomers' game
    assert _tree(out) == _tree(scratch)

    # Removing the tournament again: its games and the pages of its players who have no other
    # game go, and the site is the first build's again, byte for byte.
    (content / "games" / new.name).unlink()
    (content / "games" / "newcomers.pgn").unlink()
    removed = build(content, out, settings, cache_dir=cache, **quiet)
    assert removed.analysed == 0 and removed.written is not None
    gone = {p for p in removed.written.removed if p.startswith("players/")}
    assert gone and all(not (out / p).exists() for p in gone)
    assert _tree(out) == first_tree


def _cache_keys(cache: Path, kind: str) -> set[str]:
    """The build cache's keys of one kind (``"partition"``, ``"fragment"``)."""
    import diskcache

    with diskcache.Cache(str(build_cache_dir(cache))) as store:
        return {k for k in store.iterkeys() if k.startswith(f"{kind}|")}


def test_partition_results_no_build_uses_are_deleted(tmp_path: Path) -> None:
    """A build deletes the partition results its folder's last build used and it does not,
    unless another site on the same build cache used them; a family it reuses keeps its
    own."""
    import diskcache

    wc = _split(DATA / "small-site/games/WorldChamp1886.pgn")
    content = make_content(tmp_path / "a", {"wc.pgn": "\n\n".join(wc[:4]) + "\n"}, SETTINGS)
    shutil.copytree(DATA / "small-site/analysis", content / "analysis")
    cache, out, other = tmp_path / "cache", tmp_path / "out", tmp_path / "other"
    quiet = {"progress": False, "echo": lambda s: None}
    stray = "partition|written|before|the|record"

    def results() -> set[str]:
        return _cache_keys(cache, "partition")

    def of_quality(keys: set[str]) -> set[str]:
        return {k for k in keys if ".quality.partition_quality|" in k}

    build(content, out, _settings(content, SETTINGS), cache_dir=cache, **quiet)
    with diskcache.Cache(str(build_cache_dir(cache))) as store:
        store.set(stray, ("on no record",))
    first = results()
    q0 = of_quality(first)
    assert q0 and len(first) > len(q0) + 1

    # Another site on the same cache: every family reused, each with its partitions' keys.
    again = build(content, other, _settings(content, SETTINGS), cache_dir=cache, **quiet)
    assert again.recomputed == [] and again.partition_results_dropped == 0

    # One family's settings: its new results; the old ones are the other site's.
    quality = SETTINGS + "\n[quality]\nclip_cp = 250\n"
    second = build(content, out, _settings(content, quality), cache_dir=cache, **quiet)
    assert second.recomputed[0] == "quality" and second.partition_results_dropped == 0
    q1 = of_quality(results()) - q0
    assert q1 and results() == first | q1

    # The other site is gone: what only it and this folder's last build used goes.
    shutil.rmtree(other)
    quality = SETTINGS + "\n[quality]\nclip_cp = 200\n"
    third = build(content, out, _settings(content, quality), cache_dir=cache, **quiet)
    q2 = of_quality(results()) - q0 - q1
    assert q2 and third.partition_results_dropped == len(q0) + len(q1)
    assert results() == (first - q0) | q2  # the reused families' and the stray one stay


def test_a_fragment_made_again_replaces_the_last_one(tmp_path: Path) -> None:
    """A player's block rendered again (the settings changed) replaces the block its slot
    held in the build cache; parts that did not change (the games') stay."""
    wc = _split(DATA / "small-site/games/WorldChamp1886.pgn")
    content = make_content(tmp_path / "a", {"wc.pgn": "\n\n".join(wc[:4]) + "\n"}, SETTINGS)
    shutil.copytree(DATA / "small-site/analysis", content / "analysis")
    cache, out = tmp_path / "cache", tmp_path / "out"
    quiet = {"progress": False, "echo": lambda s: None}

    def fragments() -> dict[str, set[str]]:
        found: dict[str, set[str]] = {}
        for k in _cache_keys(cache, "fragment"):
            found.setdefault(k.split("|")[1], set()).add(k)
        return found

    build(content, out, _settings(content, SETTINGS), cache_dir=cache, **quiet)
    first = fragments()
    blocks = {name for name in first if name.endswith("-player")}
    assert "quality-player" in blocks and len(first["quality-player"]) == 2
    assert len(first["partials/game_moves.html"]) == 4

    quality = SETTINGS + "\n[quality]\nclip_cp = 250\n"
    again = build(content, out, _settings(content, quality), cache_dir=cache, **quiet)
    assert again.written is not None and again.written.rendered > 0
    second = fragments()
    assert second.keys() == first.keys()
    for name in blocks:  # every block's key holds the settings' digest
        assert len(second[name]) == len(first[name]) and not second[name] & first[name], name
    for name in first.keys() - blocks:
        assert second[name] == first[name], name
