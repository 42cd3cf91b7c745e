"""Engines that hang, talk nonsense, lie about their name or play illegal moves (issue 19
items 4, 5, 7 and 8): each case first reproduces what was seen, with the fake UCI engine."""

from __future__ import annotations

import asyncio
import re
import shutil
from pathlib import Path
from typing import Any

import chess
import chess.pgn
import psutil
import pytest

from site_builder import cli
from site_builder.analysis import engine as engine_mod
from site_builder.analysis.cache import EvalCache
from site_builder.analysis.engine import PositionTask, open_engine
from site_builder.analysis.pool import GIVE_UP_AFTER, LocalPool
from site_builder.analysis.positions import chunked
from site_builder.analysis.spec import AnalysisSpec, engine_identity, position_key
from site_builder.analysis.stage import prepare
from site_builder.analysis.validate import invalid_reason
from site_builder.config import load_settings
from site_builder.errors import EngineError
from site_builder.stats import BuildStats
from tests.conftest import DATA, STOCKFISH, make_content, requires_engine

FAKE = str(Path(__file__).parent / "engines" / "fake_uci.py")
SPEC = AnalysisSpec("FakeUCI 1.0", depth=3, nodes=0, multipv=3, hash_mb=16, threads=1)
GAME_FILE = DATA / "fixtures/pgn2tex-examples/WorldChamp1886.pgn"


def _one_game() -> str:
    text = GAME_FILE.read_text(encoding="utf-8").replace("\r\n", "\n")
    return re.split(r"\n\s*\n(?=\[Event )", text)[0] + "\n"


def _content(root: Path, engine: str, extra: str = "") -> Path:
    toml = f'[analysis]\nengine = "{engine}"\ndepth = 3\nmultipv = 3\nworkers = 1\n{extra}'
    return make_content(root, {"wc.pgn": _one_game()}, toml)


@pytest.fixture
def no_children_left() -> Any:
    """Fails the test when a child process it started (an engine) outlives it; children of
    the test process started before the test (another test's) are not its concern."""
    before = {p.pid for p in psutil.Process().children(recursive=True)}
    yield
    new = [p for p in psutil.Process().children(recursive=True) if p.pid not in before]
    _gone, alive = psutil.wait_procs(new, timeout=5)  # a killed engine takes a moment to go
    left = [p for p in alive if p.status() != psutil.STATUS_ZOMBIE]
    assert left == [], [p.cmdline() for p in left]


# --- the handshake -------------------------------------------------------------------------


@pytest.mark.parametrize("mode", ["garbage", "no-handshake"])
@pytest.mark.usefixtures("no_children_left")
def test_an_engine_that_never_says_uciok_is_stopped(
    monkeypatch: pytest.MonkeyPatch, mode: str
) -> None:
    # Seen: the build hung forever with no message.
    monkeypatch.setenv("FAKE_MODE", mode)
    monkeypatch.setattr(engine_mod, "HANDSHAKE_SECONDS", 1.0)
    with pytest.raises(EngineError, match="did not finish the UCI handshake within 1 s"):
        asyncio.run(open_engine(FAKE, 16, 1))


def test_a_garbage_engine_fails_the_build_with_a_message(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("FAKE_MODE", "garbage")
    monkeypatch.setattr(engine_mod, "HANDSHAKE_SECONDS", 1.0)
    content = _content(tmp_path, FAKE)
    code = cli.main(["analyse", "--content", str(content), "--cache", str(tmp_path / "c")])
    err = capsys.readouterr().err
    assert code == 2 and "Traceback" not in err
    assert f"the engine {FAKE} did not finish the UCI handshake" in err and "--engine" in err


def test_bin_false_as_the_engine(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # Seen: a traceback (EngineTerminatedError).
    content = _content(tmp_path, "/bin/false")
    code = cli.main(["analyse", "--content", str(content), "--cache", str(tmp_path / "c")])
    err = capsys.readouterr().err
    assert code == 2 and "Traceback" not in err
    assert "the engine /bin/false stopped during the UCI handshake" in err
    assert "[analysis] engine in content/site.toml" in err
    code = cli.main(["doctor", "--content", str(content), "--cache", str(tmp_path / "c")])
    out = capsys.readouterr().out
    assert code == 1 and "Engine: NOT WORKING" in out


# --- giving up -----------------------------------------------------------------------------


def _positions(n: int) -> list[str]:
    board = chess.Board()
    keys = []
    while len(keys) < n:
        keys.append(position_key(board))
        board.push(sorted(board.legal_moves, key=lambda m: m.uci())[len(keys) % 3])
    return keys


@pytest.mark.usefixtures("no_children_left")
def test_an_engine_that_never_answers_go_is_given_up(monkeypatch: pytest.MonkeyPatch) -> None:
    # Seen: deadline × 3 tries for every position, no give-up (1.9 h for 2 games).
    monkeypatch.setenv("FAKE_MODE", "silent-go")
    pool = LocalPool(FAKE, SPEC, 2, deadline_s=0.3, max_tries=2)
    tasks = [PositionTask(p, True, ()) for p in _positions(40)]
    written: list[int] = []
    with pytest.raises(EngineError, match=f"{GIVE_UP_AFTER} positions in a row") as caught:
        pool.run(chunked(tasks, 5), lambda results, done: written.append(len(results)))
    message = str(caught.value)
    assert f"gave up on the engine {FAKE}" in message and "no answer within 0.3 s" in message
    assert "site-builder doctor" in message
    # Two engines each stop after their position in flight: far fewer than 40 positions.
    assert len(written) <= 2 and sum(written) == 0


def test_one_bad_position_does_not_stop_the_pool(monkeypatch: pytest.MonkeyPatch) -> None:
    positions = _positions(12)
    crash_fen = chess.Board(positions[4].rsplit(" ", 1)[0]).board_fen()
    monkeypatch.setenv("FAKE_CRASH_ON", crash_fen)
    pool = LocalPool(FAKE, SPEC, 1, max_tries=2)
    stats = pool.run(chunked([PositionTask(p, True, ()) for p in positions], 4), lambda r, d: None)
    assert [p for p, _ in stats.failed] == [positions[4]] and stats.positions == 11


def test_failed_positions_make_the_build_exit_nonzero(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Seen: with positions failed the build still exited 0.
    game = chess.pgn.read_game(__import__("io").StringIO(_one_game()))
    assert game is not None
    board = game.board()
    for move in list(game.mainline_moves())[:40]:
        board.push(move)
    monkeypatch.setenv("FAKE_CRASH_ON", board.board_fen())
    content = _content(tmp_path, FAKE)
    out = tmp_path / "out"
    args = ["build", "--content", str(content), "--cache", str(tmp_path / "c")]
    code = cli.main([*args, "--output", str(out), "--no-progress"])
    err = capsys.readouterr().err
    assert code == 1 and "1 positions could not be analysed" in err
    assert f"{out / 'report.html'} lists them" in err
    report = (out / "report.html").read_text(encoding="utf-8")
    assert "engine failed on the position before 21. " in report


# --- impostors and illegal moves -------------------------------------------------------------


def _fake_copy(root: Path) -> str:
    """The fake engine under another path: another binary with the same name."""
    copy = root / "engine" / "stockfish"
    copy.parent.mkdir()
    shutil.copy2(FAKE, copy)
    text = copy.read_text(encoding="utf-8").replace(
        "Path(__file__).resolve().parents[2]", f"Path({str(Path(FAKE).resolve().parents[2])!r})"
    )
    copy.write_text(text, encoding="utf-8")
    return str(copy)


def test_an_impostor_playing_illegal_moves_stores_nothing(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Seen: "Stockfish 15.1" that returns an illegal move had its results stored under the
    # real Stockfish's key, and every later build crashed in san().
    monkeypatch.setenv("FAKE_MODE", "stockfish,illegal")
    content = _content(tmp_path, FAKE)
    cache_dir = tmp_path / "c"
    code = cli.main(["analyse", "--content", str(content), "--cache", str(cache_dir)])
    err = capsys.readouterr().err
    assert code == 2 and "Traceback" not in err
    assert "gave up on the engine" in err and "is illegal in this position" in err
    with EvalCache(cache_dir) as cache:
        assert [k for k in cache if k.startswith(("pv|", "mv|"))] == []


@requires_engine
def test_an_impostor_does_not_share_the_real_engines_entries(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    assert STOCKFISH is not None
    impostor = _fake_copy(tmp_path)
    monkeypatch.setenv("FAKE_MODE", "stockfish")
    cache_dir = tmp_path / "c"
    content = _content(tmp_path, impostor)
    first = BuildStats()
    prepare(content, load_settings(content), first, cache_dir=cache_dir, progress=False,
            echo=lambda s: None, analyse_only=True)  # fmt: skip
    assert first.analysed == first.positions > 20
    monkeypatch.delenv("FAKE_MODE")
    settings = load_settings(content, {"analysis": {"engine": STOCKFISH}})
    real = BuildStats()
    site = prepare(content, settings, real, cache_dir=cache_dir, progress=False,
                   echo=lambda s: None)  # fmt: skip
    # Same name "Stockfish 15.1", another binary: the real engine analyses everything itself.
    assert real.analysed == real.positions == first.positions and real.cache_hits == 0
    assert site is not None and site.spec is not None
    assert site.spec.binary == engine_identity(STOCKFISH) != engine_identity(impostor)
    with EvalCache(cache_dir) as cache:
        keys = [k for k in cache if k.startswith("pv|")]
        assert len(keys) == 2 * first.positions
        assert all(invalid_reason(k, cache.get(k)) is None for k in keys)


# --- an emptied evaluation cache under a surviving build cache --------------------------------


def test_an_emptied_evaluation_cache_is_analysed_again(tmp_path: Path) -> None:
    # Seen: the build said every position came "from the cache" although the evaluation
    # cache had been emptied (the build cache still held the games' move rows).
    content = _content(tmp_path, FAKE)
    settings = load_settings(content)
    cache_dir = tmp_path / "c"
    quiet: dict[str, Any] = {"cache_dir": cache_dir, "progress": False, "echo": lambda s: None}
    first = BuildStats()
    prepare(content, settings, first, **quiet)
    assert first.analysed == first.positions > 20 and first.reused == 0
    second = BuildStats()
    prepare(content, settings, second, **quiet)
    assert (second.reused, second.cache_hits, second.analysed) == (first.positions, 0, 0)
    shutil.rmtree(cache_dir)  # the build cache beside it survives
    assert cache_dir.with_name("c-build").is_dir()
    third = BuildStats()
    site = prepare(content, settings, third, **quiet)
    assert (third.reused, third.cache_hits, third.analysed) == (0, 0, first.positions)
    assert site is not None and len(site.analysed) == 1
    with EvalCache(cache_dir) as cache:
        assert len([k for k in cache if k.startswith("pv|")]) == first.positions
