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
"""

from __future__ import annotations

import time

import numpy as np

from site_builder.analysis.positions import HashSet

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


def main() -> dict[str, float]:
    print(f"positions gathered in rounds of {PER_ROUND:,} new pair hashes")
    now = {n: hash_set(_rounds(n)) for n in (16, 64)}
    before = {n: one_sorted_array(_rounds(n)) for n in (16, 32)}
    for n, seconds in now.items():
        print(f"  HashSet, {n} rounds: {seconds:.2f} s")
    for n, seconds in before.items():
        print(f"  one sorted array (before), {n} rounds: {seconds:.2f} s")
    result = {"growth_16_to_64": now[64] / now[16], "before_16_to_32": before[32] / before[16]}
    print(
        f"judged by: 16 -> 64 rounds {result['growth_16_to_64']:.1f}x (linear: 4x); the one "
        f"sorted array 16 -> 32 rounds {result['before_16_to_32']:.1f}x (linear: 2x); at 16 "
        f"rounds {before[16] / now[16]:.1f}x slower than HashSet"
    )
    return result


if __name__ == "__main__":
    main()
