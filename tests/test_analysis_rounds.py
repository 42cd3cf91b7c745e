"""The engines run whenever enough positions are missing, before more games are read (a
corpus never analysed would otherwise hold every missing position until the end): every
played move is answered as in one pass, each position searched whole at most once, and the
site is the one a single round makes."""

from __future__ import annotations

import gc
import itertools
import re
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from site_builder.analysis import stage
from site_builder.analysis.positions import Wanted, missing_tasks
from site_builder.analysis.spec import move_key, pv_key
from site_builder.build import build
from site_builder.config import load_settings
from tests.conftest import DATA, make_content, requires_engine
from tests.test_wanted import MOVES, POSITIONS, SPEC, _cache, pairs

#: What the stand-in engine puts in a position's lines: the first move of MOVES only.
_LINE = [[MOVES[0], 0, None]]


@settings(max_examples=60, deadline=None)
@given(
    wanted=st.lists(pairs, max_size=40),
    cuts=st.lists(st.integers(0, 40), max_size=5),
    cached=st.sets(st.sampled_from(POSITIONS), max_size=3),
)
def test_rounds_answer_every_move_as_one_pass(
    tmp_path_factory: Any,
    wanted: list[tuple[str, str]],
    cuts: list[int],
    cached: set[str],
) -> None:
    """After each batch the tasks are taken and "analysed" (their results put in the cache):
    the same hits as one pass, each position the cache lacked searched whole once, and every
    played move answered."""
    cache = _cache(tmp_path_factory.mktemp("cache"), {p: [MOVES[0]] for p in cached}, set())
    with cache:
        _, hits = missing_tasks(wanted, SPEC, cache)
        needed = Wanted(SPEC, cache)
        whole: list[str] = []
        edges = [0, *sorted(c for c in cuts if c <= len(wanted)), len(wanted)]
        for a, b in itertools.pairwise(edges):
            needed.add(wanted[a:b])
            for task in needed.take_tasks():
                found: dict[str, Any] = {}
                if task.need_pv:
                    whole.append(task.position)
                    found[pv_key(SPEC, task.position)] = {"lines": _LINE}
                for m in task.moves:
                    if m != MOVES[0]:
                        found[move_key(SPEC, task.position, m)] = {"cp": 0, "mate": None}
                cache.put_many(found)
            assert needed.pending == 0
        assert sorted(whole) == sorted({p for p, _ in wanted} - cached)
        assert needed.hits == hits
        for p, m in wanted:
            assert m == MOVES[0] or cache.lookup(SPEC, p, m) is not None
        assert needed.take_tasks() == []


def test_hits_count_positions_the_cache_answered(tmp_path: Path) -> None:
    """A position the cache answered when added is a hit; one handed to the engines is not,
    even after its results are in the cache."""
    cache = _cache(tmp_path / "cache", {"position 0": [MOVES[0]]}, set())
    with cache:
        needed = Wanted(SPEC, cache)
        needed.add([("position 0", MOVES[0]), ("position 1", MOVES[0])])
        assert needed.hits == 1 and needed.pending == 1
        (task,) = needed.take_tasks()
        cache.put_many({pv_key(SPEC, task.position): {"lines": _LINE}})
        needed.add([("position 1", MOVES[0]), ("position 2", MOVES[1])])
        assert needed.hits == 1 and needed.pending == 1 and len(needed) == 3
        # a new played move of a position already searched: a single-move task, not a hit
        needed.add([("position 1", MOVES[1])])
        assert needed.hits == 1 and needed.pending == 2


def _games(n: int) -> str:
    text = (DATA / "fixtures/pgn2tex-examples/WorldChamp1886.pgn").read_text(encoding="utf-8")
    parts = re.split(r"\n\s*\n(?=\[Event )", text.replace("\r\n", "\n"))
    return "\n\n".join(parts[:n]) + "\n"


def _pages(out: Path) -> dict[str, bytes]:
    return {p.relative_to(out).as_posix(): p.read_bytes() for p in out.rglob("*") if p.is_file()}


@requires_engine
@pytest.mark.engine
def test_a_site_analysed_in_rounds_is_the_one_pass_site(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    content = make_content(
        tmp_path, {"wc.pgn": _games(3)}, "[analysis]\ndepth = 6\nmultipv = 3\nworkers = 2\n"
    )
    quiet: dict[str, Any] = {"progress": False, "echo": lambda s: None}
    one = build(
        content, tmp_path / "one", load_settings(content), cache_dir=tmp_path / "c1", **quiet
    )

    calls: list[int] = []
    collecting: list[bool] = []
    run = stage.run_analysis

    def counted(needed: Wanted, *args: Any) -> None:
        calls.append(needed.pending)
        collecting.append(gc.isenabled())  # hours of asyncio: cycles must be collected
        run(needed, *args)

    monkeypatch.setattr(stage, "run_analysis", counted)
    monkeypatch.setattr(stage, "_GAMES_PER_ROUND", 1)  # a round of plies a game
    monkeypatch.setattr(stage, "POSITIONS_PER_ANALYSIS", 30)
    rounds = build(
        content, tmp_path / "rounds", load_settings(content), cache_dir=tmp_path / "c2", **quiet
    )

    assert len([n for n in calls if n]) >= 3, calls  # the engines ran between the games
    assert all(collecting), collecting
    assert rounds.positions == one.positions > 0
    assert rounds.cache_hits == one.cache_hits == 0
    assert rounds.analysed >= one.analysed == one.positions
    assert rounds.failed == one.failed == []
    assert _pages(tmp_path / "rounds") == _pages(tmp_path / "one")
