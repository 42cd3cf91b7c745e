"""A cache that cannot be poisoned (issue 19 item 4) and a corrupt one that can be salvaged
(item 7): every evaluation is checked before it is stored, at import and by doctor."""

from __future__ import annotations

import gzip
import json
import sqlite3
from pathlib import Path
from typing import Any

import chess
import diskcache
import pytest

from site_builder import cli
from site_builder.analysis import exchange
from site_builder.analysis.cache import (
    IMPORTED_PREFIX,
    CacheCorruptError,
    EvalCache,
    check_cache,
    salvage_cache,
)
from site_builder.analysis.spec import AnalysisSpec, move_key, position_key, pv_key
from site_builder.analysis.validate import invalid_reason, parse_key
from tests.conftest import DATA

SHIPPED = DATA / "small-site/analysis/small-d6.jsonl.gz"
SMALL = 400  # entries of the shipped file most tests import (all of it takes seconds)
SPEC = AnalysisSpec("Stockfish 15.1", 6, 0, 3, 16, 1, binary="0123456789abcdef")
START = position_key(chess.Board())


def _lines(*moves: str) -> dict[str, Any]:
    return {
        "depth": 6,
        "seldepth": 8,
        "nodes": 1000,
        "time": 0.01,
        "lines": [[m, 20 - i, None] for i, m in enumerate(moves)],
        "by_depth": [[d, 20, None, moves[0]] for d in range(1, 7)],
    }


GOOD = _lines("e2e4", "d2d4", "g1f3")


@pytest.mark.parametrize(
    ("value", "reason"),
    [
        (5, "not a mapping"),
        (_lines("e2e5"), "line 1: move e2e5 is illegal"),
        ({**GOOD, "lines": [["e2e4", 20.5, None]]}, "not an integer"),
        ({**GOOD, "lines": [["e2e4", 20, 3]]}, "both centipawns and mate"),
        ({**GOOD, "lines": [["e2e4", None, None]]}, "neither centipawns nor mate"),
        (_lines("e2e4", "d2d4", "g1f3", "c2c4"), "4 lines but multi-PV is 3"),
        ({**GOOD, "lines": []}, "no principal line"),
        (_lines("e2e4", "e2e4"), "appears twice"),
        ({**GOOD, "by_depth": [[6, 20, None, "e1e8"]]}, "depth 6: move e1e8 is illegal"),
        ({k: v for k, v in GOOD.items() if k != "nodes"}, "'nodes' is missing"),
        ({**GOOD, "lines": [[True, 20, None]]}, "not a UCI string"),
    ],
)
def test_invalid_lines_are_named(value: object, reason: str) -> None:
    assert invalid_reason(pv_key(SPEC, START), GOOD) is None
    found = invalid_reason(pv_key(SPEC, START), value)
    assert found is not None and reason in found


def test_played_move_entries_and_keys() -> None:
    good = {"move": "a2a3", "cp": -10, "mate": None, "depth": 6, "nodes": 10, "time": 0.0}
    assert invalid_reason(move_key(SPEC, START, "a2a3"), good) is None
    assert "illegal" in str(invalid_reason(move_key(SPEC, START, "a2a5"), good))
    assert "for move 'a2a3'" in str(invalid_reason(move_key(SPEC, START, "h2h3"), good))
    assert "neither" in str(invalid_reason(move_key(SPEC, START, "a2a3"), {**good, "cp": None}))
    parts = parse_key(move_key(SPEC, START, "a2a3"))
    assert parts is not None and (parts.position, parts.move, parts.multipv) == (
        START,
        "a2a3",
        3,
    )
    # Evaluations from PGN comments name no best move: the empty move is allowed there only.
    unknown = {**GOOD, "lines": [["", 20, None]], "by_depth": []}
    assert invalid_reason(pv_key(exchange.PGN_EVAL_SPEC, START), unknown) is None
    assert invalid_reason(pv_key(SPEC, START), unknown) is not None
    assert invalid_reason("meta|anything", 5) is None


@pytest.mark.parametrize(
    "position",
    [
        "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0",
        "rnbqkbnr/ppp1p1pp/8/3pPp2/8/8/PPPP1PPP/RNBQKBNR w KQkq f6 0",
        "r3k2r/8/8/8/8/8/8/R3K2R b Kq - 12",
        "8/8/8/8/8/5k2/6q1/7K w - - 3",
    ],
)
def test_the_fast_board_reads_positions_as_python_chess(position: str) -> None:
    from site_builder.analysis.spec import board_from_key
    from site_builder.analysis.validate import _board

    fast, slow = _board(position), board_from_key(position)
    assert fast is not None
    assert fast.fen() == slow.fen() and set(fast.legal_moves) == set(slow.legal_moves)


@pytest.mark.parametrize(
    "position",
    [
        "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBN w KQkq - 0",  # a short rank
        "rnbqkbnr/pppppppp/9/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0",
        "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP w KQkq - 0",  # seven ranks
        "rnbqkbnr/ppppxppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0",
        "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR x KQkq - 0",
        "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - ?",
        "8/8/8/8/8/8/8/8 w - - 0",  # no kings
        "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq",
    ],
)
def test_malformed_positions_are_invalid(position: str) -> None:
    assert "not a valid chess position" in str(invalid_reason(f"pv|{SPEC.key}|{position}", GOOD))


def test_every_shipped_evaluation_is_valid() -> None:
    header = exchange.read_header(SHIPPED)
    spec = exchange.spec_from_dict(header["spec"])
    with gzip.open(SHIPPED, "rt") as f:
        f.readline()
        for line in f:
            e = json.loads(line)
            key = move_key(spec, e["p"], e["m"]) if "m" in e else pv_key(spec, e["p"])
            assert invalid_reason(key, e["v"]) is None, (key, e["v"])


def _write_export(path: Path, entries: list[dict[str, Any]], spec: dict[str, Any]) -> None:
    header = {"format": "site-builder-analysis", "version": 1, "spec": spec}
    with gzip.open(path, "wt", encoding="utf-8") as f:
        f.write(json.dumps({**header, "entries": len(entries)}) + "\n")
        for e in entries:
            f.write(json.dumps(e) + "\n")


@pytest.fixture(scope="module")
def small(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The first entries of the shipped analysis, as an export of their own."""
    header = exchange.read_header(SHIPPED)
    with gzip.open(SHIPPED, "rt") as f:
        f.readline()
        entries = [json.loads(line) for _, line in zip(range(SMALL), f, strict=False)]
    path = tmp_path_factory.mktemp("small") / "small.jsonl.gz"
    _write_export(path, entries, header["spec"])
    return path


def _fives(path: Path) -> None:
    """What was seen: a file whose every value is 5 (it used to import, then crash builds)."""
    header = exchange.read_header(SHIPPED)
    with gzip.open(SHIPPED, "rt") as f:
        f.readline()
        entries = [{**json.loads(line), "v": 5} for _, line in zip(range(200), f, strict=False)]
    _write_export(path, entries, header["spec"])


def test_import_rejects_a_file_of_fives(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    fives = tmp_path / "fives.jsonl.gz"
    _fives(fives)
    cache_dir = tmp_path / "cache"
    code = cli.main(["analysis", "import", str(fives), "--cache", str(cache_dir)])
    err = capsys.readouterr().err
    assert code == 1
    assert "200 entries of" in err and "fives.jsonl.gz" in err and "not a mapping" in err
    with EvalCache(cache_dir) as cache:
        assert not [k for k in cache if k.startswith(("pv|", "mv|"))]


def test_reimport_repairs_a_poisoned_entry(tmp_path: Path, small: Path) -> None:
    with EvalCache(tmp_path / "c") as cache:
        first = exchange.import_analysis(cache, small)
        key = next(k for k in cache if k.startswith("pv|"))
        good = cache.get(key)
        cache.put_many({key: 5})  # as an older version let an import store it
        again = exchange.import_analysis(cache, small)
        assert (again.added, again.repaired) == (0, 1)
        assert cache.get(key) == good and first.added == SMALL


def test_truncated_import_names_the_file(
    tmp_path: Path, small: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cut = tmp_path / "cut.jsonl.gz"
    data = small.read_bytes()
    cut.write_bytes(data[: len(data) // 2])
    code = cli.main(["analysis", "import", str(cut), "--cache", str(tmp_path / "cache")])
    err = capsys.readouterr().err
    assert code == 2 and "Traceback" not in err
    assert "cut.jsonl.gz: the file is truncated or damaged" in err
    assert "import it again" in err
    with EvalCache(tmp_path / "cache") as cache:  # what came before the damage is kept
        assert len([k for k in cache if k.startswith("pv|")]) > SMALL // 4


def test_doctor_check_removes_invalid_entries(
    tmp_path: Path, small: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cache_dir = tmp_path / "cache"
    with EvalCache(cache_dir) as cache:
        exchange.import_analysis(cache, small)
        keys = sorted(k for k in cache if k.startswith("pv|"))
        cache.put_many({keys[0]: 5, keys[1]: _lines("e2e5"), f"{IMPORTED_PREFIX}x": {}})
        old_id = cache.identity()
        total = len(cache)
    code = cli.main(["doctor", "--check", "--cache", str(cache_dir)])
    out = capsys.readouterr().out
    assert code == 0 and "Removed 2 invalid evaluations" in out
    assert "value is int, not a mapping" in out
    with EvalCache(cache_dir) as cache:
        assert keys[0] not in cache and keys[1] not in cache and keys[2] in cache
        # the import markers go, so the next build imports the shipped analysis again
        assert f"{IMPORTED_PREFIX}x" not in cache and len(cache) == total - 3
        assert cache.identity() != old_id  # the build cache's rows from it are not reused
        assert check_cache(cache).removed == {}


def _corrupt(cache_dir: Path, small: Path) -> int:
    """A real cache whose database file is then damaged; returns its evaluation count."""
    with EvalCache(cache_dir) as cache:
        exchange.import_analysis(cache, small)
        n = len([k for k in cache if k.startswith(("pv|", "mv|"))])
    with sqlite3.connect(cache_dir / "cache.db") as con:
        con.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    db = cache_dir / "cache.db"
    data = bytearray(db.read_bytes())
    data[0:16] = b"garbage garbage!"  # the SQLite header
    db.write_bytes(bytes(data))
    return n


def test_corrupt_cache_names_the_salvage_command(
    tmp_path: Path, small: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cache_dir = tmp_path / "cache"
    _corrupt(cache_dir, small)
    with pytest.raises(CacheCorruptError, match="doctor --salvage"):
        EvalCache(cache_dir)
    code = cli.main(["analysis", "import", str(small), "--cache", str(cache_dir)])
    err = capsys.readouterr().err
    assert code == 2 and "Traceback" not in err
    assert f"{cache_dir / 'cache.db'} is corrupt" in err and "doctor --salvage" in err


def test_salvage_keeps_the_readable_entries(tmp_path: Path, small: Path) -> None:
    cache_dir = tmp_path / "cache"
    with EvalCache(cache_dir) as cache:
        exchange.import_analysis(cache, small)
        cache.put_many({"pv|" + SPEC.key + "|" + START: 5})
        n = len([k for k in cache if k.startswith(("pv|", "mv|"))])
    with sqlite3.connect(cache_dir / "cache.db") as con:
        con.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    # Damage the pages holding the index, not the rows: some rows stay readable.
    db = cache_dir / "cache.db"
    data = bytearray(db.read_bytes())
    page = 4096
    for start in range(len(data) - 8 * page, len(data) - 2 * page, page):
        data[start : start + 64] = b"\xff" * 64
    db.write_bytes(bytes(data))
    result = salvage_cache(cache_dir)
    assert result.aside is not None and result.aside.exists()
    assert 0 < result.copied < n and result.invalid == 1
    with EvalCache(cache_dir) as fresh:
        keys = [k for k in fresh if k.startswith(("pv|", "mv|"))]
        assert len(keys) == result.copied
        assert all(invalid_reason(k, fresh.get(k)) is None for k in keys)


def test_salvage_of_an_unreadable_file_starts_afresh(
    tmp_path: Path, small: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cache_dir = tmp_path / "cache"
    _corrupt(cache_dir, small)
    code = cli.main(["doctor", "--salvage", "--cache", str(cache_dir)])
    out = capsys.readouterr().out
    assert code == 0 and "Salvaged 0 valid evaluations" in out
    asides = [p for p in cache_dir.glob("cache.db.corrupt-*") if p.name[-1].isdigit()]
    assert len(asides) == 1 and asides[0].read_bytes().startswith(b"garbage")
    with diskcache.Cache(str(cache_dir)) as fresh:  # a working cache again
        assert len(fresh) == 0


def test_only_a_damaged_database_is_called_corrupt() -> None:
    """A read-only, locked or full evaluation cache is not sent to `doctor --salvage`."""
    import sqlite3

    from site_builder.analysis.cache import is_corrupt

    def error(kind: type[sqlite3.DatabaseError], text: str, code: int) -> sqlite3.DatabaseError:
        exc = kind(text)
        exc.sqlite_errorcode = code  # type: ignore[attr-defined]
        return exc

    assert is_corrupt(error(sqlite3.DatabaseError, "database disk image is malformed", 11))
    assert is_corrupt(error(sqlite3.DatabaseError, "file is not a database", 26))
    readonly = error(sqlite3.OperationalError, "attempt to write a readonly database", 8)
    assert not is_corrupt(readonly)
    assert not is_corrupt(error(sqlite3.OperationalError, "database or disk is full", 13))
    assert not is_corrupt(error(sqlite3.OperationalError, "database is locked", 5))
