"""The positions a build must analyse, gathered round by round (issue 17, item 3: no phase
growing faster than linearly): `positions.Wanted` keeps the distinct (position, played move)
pairs and positions seen as 64-bit hashes, and asks of each new round's which were seen.

A corpus of distinct games (unlike the scale benchmark's copies of the demo, whose positions
repeat) brings about 150,000 new pairs a round of 2,000 games. This times ``HashSet`` (sorted
runs, merged as their lengths double) on rounds of 150,000 new random hashes, 16 and 64
rounds (32,000 and 128,000 games), against the earlier code's pattern (one sorted array,
``np.isin`` then ``np.union1d`` with each round), which sorted everything seen at every round.

Judged by: the time ratio from 16 to 64 rounds (4 for linear growth; n log n a little more),
and the earlier pattern's at 16 and 32 rounds beside it (it was run no further: quadratic, it
would take minutes).

And the memory a never-analysed corpus holds while its positions are gathered: ``Wanted`` fed
rounds of 20,000 new (position, move) pairs against an empty evaluation cache, the tasks
taken (as the build hands them to the engines) whenever BOUND are pending, or only at the
end (as before): the peak of Python's allocations (tracemalloc) at 8 and 32 rounds. BOUND is
100,000 here, a fifth of the build's ``stage.POSITIONS_PER_ANALYSIS``, so that a short run
passes it several times. Judged by: its growth from 8 to 32 rounds (4 when the corpus sets it).
"""

from __future__ import annotations

import tempfile
import time
import tracemalloc
from pathlib import Path

import numpy as np

from site_builder.analysis import stage
from site_builder.analysis.cache import EvalCache
from site_builder.analysis.positions import HashSet, Wanted
from site_builder.analysis.spec import AnalysisSpec

PER_ROUND = 150_000


def _rounds(count: int) -> list[np.ndarray]:
    rng = np.random.default_rng(17)
    return [rng.integers(0, 2**63, PER_ROUND, dtype=np.uint64) for _ in range(count)]


def hash_set(rounds: list[np.ndarray]) -> float:
    seen = HashSet()
    start = time.perf_counter()
    for batch in rounds:
        seen.add(batch)  # which were new, and the batch added
    return time.perf_counter() - start


def one_sorted_array(rounds: list[np.ndarray]) -> float:
    seen = np.empty(0, np.uint64)
    start = time.perf_counter()
    for batch in rounds:
        np.isin(batch, seen)
        seen = np.union1d(seen, batch)
    return time.perf_counter() - start


PAIRS_PER_ROUND = 20_000
BOUND = 100_000
_SPEC = AnalysisSpec("Stockfish 15.1", 10, 0, 10, 16, 1, binary="0123456789abcdef")


def _pairs(round_no: int) -> list[tuple[str, str]]:
    """New pairs: an EPD-sized position (with its halfmove clock) and a UCI move each."""
    base = "rnbqkb1r/pp3ppp/2p1pn2/3p4/2PP4/2N2N2/PP2PPPP/R1BQKB1R w KQkq -"
    return [(f"{base} {round_no}:{i}", "e2e4") for i in range(PAIRS_PER_ROUND)]


def held_while_gathering(rounds: int, taken: bool) -> int:
    """Peak bytes Python allocated while ``rounds`` rounds of new pairs were gathered."""
    with tempfile.TemporaryDirectory() as folder, EvalCache(Path(folder)) as cache:
        tracemalloc.start()
        needed = Wanted(_SPEC, cache)
        for r in range(rounds):
            needed.add(_pairs(r))
            if taken and needed.pending >= BOUND:
                needed.take_tasks()
        needed.take_tasks()
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
    return peak


def main() -> dict[str, float]:
    held = {(n, t): held_while_gathering(n, t) for n in (8, 32) for t in (True, False)}
    print(
        f"memory while gathering a never-analysed corpus, rounds of {PAIRS_PER_ROUND:,} new "
        f"pairs, engines run at {BOUND:,} pending positions (the build's bound: "
        f"{stage.POSITIONS_PER_ANALYSIS:,}):"
    )
    for (n, t), peak in held.items():
        how = "tasks taken as they reach the bound" if t else "tasks taken at the end (before)"
        print(f"  {n} rounds ({n * PAIRS_PER_ROUND:,} pairs), {how}: {peak / 1e6:.0f} MB")
    print(f"positions gathered in rounds of {PER_ROUND:,} new pair hashes")
    now = {n: hash_set(_rounds(n)) for n in (16, 64)}
    before = {n: one_sorted_array(_rounds(n)) for n in (16, 32)}
    for n, seconds in now.items():
        print(f"  HashSet, {n} rounds: {seconds:.2f} s")
    for n, seconds in before.items():
        print(f"  one sorted array (before), {n} rounds: {seconds:.2f} s")
    result = {
        "growth_16_to_64": now[64] / now[16],
        "before_16_to_32": before[32] / before[16],
        "memory_8_to_32": held[32, True] / held[8, True],
        "memory_before_8_to_32": held[32, False] / held[8, False],
    }
    print(
        f"judged by: 16 -> 64 rounds {result['growth_16_to_64']:.1f}x (linear: 4x); the one "
        f"sorted array 16 -> 32 rounds {result['before_16_to_32']:.1f}x (linear: 2x); at 16 "
        f"rounds {before[16] / now[16]:.1f}x slower than HashSet; memory 8 -> 32 rounds "
        f"{result['memory_8_to_32']:.2f}x (before {result['memory_before_8_to_32']:.2f}x)"
    )
    return result


if __name__ == "__main__":
    main()
