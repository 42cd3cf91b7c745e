"""The analysis stage's plies and move rows made in forked workers equal those made in one
process: the same move store (every file's rows, facts and games), and the same games left
unanalysed."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from site_builder.analysis import stage
from site_builder.config import load_settings
from site_builder.stats import BuildStats
from tests.conftest import DATA


def _prepare(tmp_path: Path, workers: int, monkeypatch: pytest.MonkeyPatch) -> dict[str, object]:
    monkeypatch.setattr(stage, "processes", lambda: workers)
    content = DATA / "small-site"
    cache = tmp_path / f"cache-{workers}"
    site = stage.prepare(
        content,
        load_settings(content),
        BuildStats(),
        cache_dir=cache,
        progress=False,
        echo=lambda s: None,
    )
    assert site is not None and site.partitions is not None
    store = site.partitions.store
    # A file's name, and the row keys its footer lists, hold the evaluation cache's
    # identity, which differs: compare the rest of the file, and the games listed.
    files = {}
    for path in sorted(store.directory.glob("*.parquet")):
        table = pq.read_table(path)
        footer = dict(table.schema.metadata or {})
        games = sorted(json.loads(footer.pop(b"site_builder.members")))
        files[path.name[:6]] = (table.replace_schema_metadata(footer), games)
    every = sorted(site.analysed)
    return {
        "files": files,
        "analysed": every,
        "not_analysed": sorted(site.not_analysed.items()),
        "rows": [site.game_store.moves(g, ["ply", "played", "best_san", "delta"]) for g in every],
        "plies": [site.game_store.plies(g) for g in every],
    }


def test_plies_and_rows_made_in_workers_equal_those_made_here(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[int] = []
    real = stage.fork_pool

    def counting(workers: int, *args: object) -> object:
        calls.append(workers)
        return real(workers, *args)  # type: ignore[arg-type]

    monkeypatch.setattr(stage, "fork_pool", counting)
    here = _prepare(tmp_path, 1, monkeypatch)
    assert calls == []
    forked = _prepare(tmp_path, 2, monkeypatch)
    assert calls == [2, 2]  # the plies, then the rows, of the 188 games
    assert here["files"] and here == forked


def test_rounds_go_to_the_pool_one_ahead_and_come_back_in_order(tmp_path: Path) -> None:
    """:func:`stage.in_rounds` sends a round to the build's pool before handing back the one
    before it (the workers make it while the build keeps the last), and its results are
    those made in one process, in order; the workers keep the plies they made in the build
    cache, where the build's process then reads them."""
    from site_builder.analysis.positions import analysed_plies, game_plies
    from site_builder.config import TimeControlSection
    from site_builder.forked import worker_pool
    from site_builder.incremental import BuildCache
    from site_builder.ingest.names import AliasTable
    from site_builder.ingest.pgn import read_file

    games = [
        g
        for path in sorted((DATA / "small-site/games").glob("*.pgn"))
        for g in read_file(path, path.name, AliasTable({}), TimeControlSection())[0]
    ]
    fingerprints = {g.game_id: stage.game_fingerprint(g) for g in games}
    tasks = [(g, 1, stage.ply_key(fingerprints[g.game_id], 1)) for g in games]
    size = 70  # above stage._FEW, so the rounds but the last go to the pool
    assert len(tasks) > 2 * size and size >= stage._FEW
    events: list[tuple[str, int]] = []

    def rounds():  # type: ignore[no-untyped-def]
        for start in range(0, len(tasks), size):
            events.append(("sent", start))
            yield tasks[start : start + size]

    made = []
    with BuildCache(tmp_path / "build") as cache, worker_pool(2):
        context = {"build_cache": cache, "first_move": 1}
        for items, pairs in stage.in_rounds(stage._wanted_of_games, rounds(), 2, context):
            events.append(("back", tasks.index(items[0])))
            made.extend(pairs)
        assert all(key in cache for _, _, key in tasks)  # kept by the workers
        keys = {g.game_id: key for g, _, key in tasks}
        plies_at = stage.PlyKeys(keys, dict.fromkeys(fingerprints, 1), 1)
        kept = stage.cached_plies(games, plies_at, cache)
    plies = [game_plies(g, 1) for g in games]
    assert made == [[(p.position, p.played) for p in analysed_plies(ps, 1)] for ps in plies]
    assert [kept[g.game_id] for g in games] == plies
    starts = list(range(0, len(tasks), size))
    expected = [("sent", starts[0])]
    for here, after in zip(starts, [*starts[1:], None], strict=True):
        if after is not None:
            expected.append(("sent", after))
        expected.append(("back", here))
    assert events == expected


def test_new_files_are_parsed_in_the_builds_pool_as_here(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The build cache's reader parses the new files first in the build's pool of workers
    (``forked.pool_map``: no pool of its own), the largest first; the games and problems are
    those parsed here, and a second read parses nothing."""
    from site_builder import incremental
    from site_builder.forked import worker_pool
    from site_builder.incremental import BuildCache
    from site_builder.ingest.names import AliasTable
    from site_builder.ingest.pgn import read_collection

    settings = load_settings(DATA / "small-site")
    games = DATA / "small-site" / "games"
    here = read_collection(games, AliasTable({}), settings.time_control)
    sent: list[list[str]] = []
    real = incremental.pool_map

    def recorded(work, items):  # type: ignore[no-untyped-def]
        sent.append([source for _, source, _, _ in items])
        return real(work, items)

    monkeypatch.setattr(incremental, "pool_map", recorded)
    with BuildCache(tmp_path / "build") as cache, worker_pool(2):
        reader = cache.cached_reader(AliasTable({}), settings.time_control)
        there = read_collection(games, AliasTable({}), settings.time_control, reader=reader)
        again = read_collection(games, AliasTable({}), settings.time_control, reader=reader)
    sizes = {p.name: p.stat().st_size for p in games.glob("*.pgn")}
    assert len(sent) == 1 and sorted(sent[0]) == sorted(sizes)
    assert [sizes[s] for s in sent[0]] == sorted(sizes.values(), reverse=True)
    assert there.games == here.games == again.games and there.problems == here.problems
