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
