"""Analysis export/import, and evaluations from lichess-style [%eval] comments."""

from __future__ import annotations

import gzip
import json
import shutil
from pathlib import Path

import pytest

from site_builder.analysis import exchange
from site_builder.analysis.cache import EvalCache
from site_builder.analysis.spec import AnalysisSpec, move_key, pv_key
from site_builder.analysis.stage import prepare
from site_builder.config import load_settings
from site_builder.families.quality import compute as quality
from site_builder.stats import BuildStats
from tests.conftest import DATA, make_content

SPEC = AnalysisSpec("Stockfish 15.1", 6, 0, 10, 16, 1)


def test_export_import_round_trip(tmp_path: Path) -> None:
    shipped = DATA / "small-site/analysis/small-d6.jsonl.gz"
    with EvalCache(tmp_path / "a") as a:
        imported = exchange.import_analysis(a, shipped)
        spec = imported.spec
        assert spec == SPEC.imported() and imported.added == 11898 and not imported.rejected
        again = exchange.import_analysis(a, shipped)
        assert again.added == again.repaired == 0  # nothing new the second time
        out = tmp_path / "export.jsonl.gz"
        assert exchange.export_analysis(a, spec, out) == 11898
    # Sorted entries, no name or time in the gzip header: same content, same bytes.
    assert gzip.decompress(out.read_bytes()) == gzip.decompress(shipped.read_bytes())
    with EvalCache(tmp_path / "a") as a:
        exchange.export_analysis(a, spec, tmp_path / "other-name.jsonl.gz")
    assert (tmp_path / "other-name.jsonl.gz").read_bytes() == out.read_bytes()
    header = exchange.read_header(out)
    assert header["format"] == "site-builder-analysis" and header["version"] == 1
    assert header["spec"]["engine"] == "Stockfish 15.1" and header["entries"] == 11898


def test_broken_files_are_named(tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl.gz"
    bad.write_bytes(b"not gzip")
    with pytest.raises(exchange.ExchangeError, match=r"bad\.jsonl\.gz: not a site-builder"):
        exchange.read_header(bad)
    future = tmp_path / "future.jsonl.gz"
    with gzip.open(future, "wt") as f:
        f.write(json.dumps({"format": "site-builder-analysis", "version": 99, "spec": {}}) + "\n")
    with pytest.raises(exchange.ExchangeError, match="version 99 is not supported"):
        exchange.read_header(future)


def test_pgn_evals_become_single_line_evaluations(tmp_path: Path) -> None:
    pgn = DATA / "lichess/tata2022-evals.pgn"
    with EvalCache(tmp_path / "c") as cache:
        games, added = exchange.import_pgn_evals(cache, pgn)
        assert games == 2 and added > 150
        keys = [k for k in cache if k.startswith("pv|")]
        value = cache.get(keys[0])
        assert value["lines"][0][0] == exchange.UNKNOWN_MOVE and len(value["lines"]) == 1


def test_build_from_pgn_evals(tmp_path: Path) -> None:
    pgn = DATA / "lichess/tata2022-evals.pgn"
    content = make_content(tmp_path, {"tata.pgn": pgn}, '[analysis]\nsource = "pgn-eval"\n')
    (content / "analysis").mkdir()
    shutil.copyfile(pgn, content / "analysis" / "tata2022-evals.pgn")
    site = prepare(
        content,
        load_settings(content),
        BuildStats(),
        cache_dir=tmp_path / "cache",
        progress=False,
        echo=lambda s: None,
    )
    assert site is not None and site.spec == exchange.PGN_EVAL_SPEC
    assert len(site.analysed) == 2
    moves = site.moves
    # Duda–Rapport, 13. Na4: [%eval 0.19] before, [%eval -1.47] after, White to move.
    row = moves[
        (moves["move_number"] == 13) & moves["white"] & (moves["player"] == "Duda, Jan-Krzysztof")
    ].iloc[0]
    assert (row["e_best"], row["e_played"], row["delta"]) == (19, -147, 166)
    res = quality(site)
    assert res.games["match_rate"].isna().all()  # no best move in [%eval] comments
    assert res.games["q"].notna().all()
    # Methods that need the top lines or per-depth scores say so instead of a number.
    from site_builder.families import all_families

    for fam in all_families():
        site.state.results[fam.name] = fam.compute(site)
    assert "needs a multi-PV analysis" in site.state.results["intrinsic"].status
    assert "needs the top 10 lines of a multi-PV analysis" in site.state.results["bayesian"].status
    complexity = site.state.results["conformance"].complexity
    assert complexity["status"].str.startswith("n/a: no per-depth scores").all()


def test_spec_key_changes_with_every_setting() -> None:
    keys = {
        pv_key(s, "p")
        for s in [
            SPEC,
            AnalysisSpec("Stockfish 16", 6, 0, 10, 16, 1),
            AnalysisSpec("Stockfish 15.1", 7, 0, 10, 16, 1),
            AnalysisSpec("Stockfish 15.1", 0, 5000, 10, 16, 1),
            AnalysisSpec("Stockfish 15.1", 6, 0, 5, 16, 1),
            AnalysisSpec("Stockfish 15.1", 6, 0, 10, 64, 1),
            AnalysisSpec("Stockfish 15.1", 6, 0, 10, 16, 2),
        ]
    }
    assert len(keys) == 7


def test_lookup_prefers_the_engines_own_answer_to_an_imported_one(tmp_path: Path) -> None:
    """Each spec's keys are made once per cache; the order stays: the engine's own entry,
    then the imported one; a spec of imported evaluations reads only those."""
    own = AnalysisSpec("Stockfish 15.1", 6, 0, 10, 16, 1, binary="abc")
    other = AnalysisSpec("Stockfish 15.1", 8, 0, 10, 16, 1, binary="abc")
    position = "8/8/8/8/8/8/8/K1k5 w - -"
    with EvalCache(tmp_path / "c") as cache:
        cache.put_many({pv_key(own.imported(), position): {"lines": [["a1a2", 0]]}})
        assert cache.lookup(own, position) == {"lines": [["a1a2", 0]]}
        cache.put_many({pv_key(own, position): {"lines": [["a1b1", 5]]}})
        assert cache.lookup(own, position) == {"lines": [["a1b1", 5]]}
        assert cache.lookup(own.imported(), position) == {"lines": [["a1a2", 0]]}
        assert cache.lookup(other, position) is None  # another depth: other keys
        cache.put_many({move_key(other.imported(), position, "a1b2"): {"score": 3}})
        assert cache.lookup(other, position, "a1b2") == {"score": 3}
