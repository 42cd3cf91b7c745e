"""What the engines must search, gathered a batch of games at a time (the build holds one
round of plies, not the corpus's): the same tasks, hits and positions as all at once."""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from site_builder.analysis.cache import EvalCache
from site_builder.analysis.positions import HashSet, Wanted, missing_tasks
from site_builder.analysis.spec import AnalysisSpec, move_key, pv_key

SPEC = AnalysisSpec("Stockfish 15.1", 6, 0, 3, 16, 1, binary="0123456789abcdef")
POSITIONS = [f"position {i}" for i in range(6)]
MOVES = ["e2e4", "d2d4", "g1f3", "c2c4"]


def _cache(folder: Path, lines: dict[str, list[str]], singles: set[tuple[str, str]]) -> EvalCache:
    cache = EvalCache(folder)
    values: dict[str, Any] = {
        pv_key(SPEC, p): {"lines": [[m, 0, None] for m in ms]} for p, ms in lines.items()
    }
    values.update({move_key(SPEC, p, m): {"cp": 0, "mate": None} for p, m in singles})
    cache.put_many(values)
    return cache


pairs = st.tuples(st.sampled_from(POSITIONS), st.sampled_from(MOVES))


@settings(max_examples=60, deadline=None)
@given(
    wanted=st.lists(pairs, max_size=40),
    cuts=st.lists(st.integers(0, 40), max_size=5),
    lines=st.dictionaries(
        st.sampled_from(POSITIONS), st.lists(st.sampled_from(MOVES), unique=True, max_size=2)
    ),
    singles=st.sets(pairs, max_size=6),
)
def test_batches_need_what_one_pass_needs(
    tmp_path_factory: Any,
    wanted: list[tuple[str, str]],
    cuts: list[int],
    lines: dict[str, list[str]],
    singles: set[tuple[str, str]],
) -> None:
    cache = _cache(tmp_path_factory.mktemp("cache"), lines, singles)
    with cache:
        tasks, hits = missing_tasks(wanted, SPEC, cache)
        needed = Wanted(SPEC, cache)
        edges = [0, *sorted(c for c in cuts if c <= len(wanted)), len(wanted)]
        for a, b in itertools.pairwise(edges):
            needed.add(wanted[a:b])
        by_position = {t.position: (t.need_pv, t.moves) for t in needed.tasks()}
    # Each position is searched once, with every played move it still lacks, in the order
    # the games played them.
    assert by_position == {t.position: (t.need_pv, t.moves) for t in tasks}
    assert len(by_position) == len(needed.tasks())
    assert needed.hits == hits
    assert len(needed.positions) == len({p for p, _ in wanted})
    # One pass, by hand: a position the cache lacks is searched whole with its moves; a
    # cached one, for each played move neither in its lines nor cached alone.
    expected: dict[str, tuple[bool, tuple[str, ...]]] = {}
    for position in dict.fromkeys(p for p, _ in wanted):
        moves = tuple(dict.fromkeys(m for p, m in wanted if p == position))
        if position not in lines:
            expected[position] = (True, moves)
            continue
        extra = tuple(m for m in moves if m not in lines[position] and (position, m) not in singles)
        if extra:
            expected[position] = (False, extra)
    assert by_position == expected
    assert hits == len({p for p, _ in wanted}) - len(expected)


@settings(max_examples=80, deadline=None)
@given(batches=st.lists(st.lists(st.integers(0, 60), max_size=30), max_size=25))
def test_the_hash_set_holds_what_a_set_holds(batches: list[list[int]]) -> None:
    """Batches of hashes (repeats within and across batches, many small batches so that the
    sorted runs merge): each lookup answers as a Python set would, and the runs hold each hash
    once, sorted."""
    seen: set[int] = set()
    hashes = HashSet()
    for batch in batches:
        values = np.array([v * 0x9E3779B97F4A7C15 % 2**64 for v in batch], dtype=np.uint64)
        assert hashes.contains(values).tolist() == [int(v) in seen for v in values]
        hashes.add(values)
        seen.update(int(v) for v in values)
        assert len(hashes) == len(seen)
        assert hashes.sorted().tolist() == sorted(seen)
    assert len(hashes._runs) <= max(1, len(seen)).bit_length() + 1
