"""The calibration's sample of a large bucket (``[intrinsic] calibration_max_turns``): whole
games, drawn by a seeded hash whatever the order of the turns, and a calibration fitted on it
still recovers the agents the turns were simulated from."""

from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd
import pytest

from site_builder.config import IntrinsicSection
from site_builder.metrics import intrinsic as I
from tests.test_intrinsic import TRUE_C, TRUE_ELO, _simulated_calibration_data


def _bucket(turns_per_game: list[int]) -> tuple[pd.DataFrame, np.ndarray]:
    """Turns of games of the given lengths, all in bucket 2500, with one turn outside."""
    ids = [f"game-{g:04d}" for g, n in enumerate(turns_per_game) for _ in range(n)]
    meta = pd.DataFrame({"game_id": [*ids, "elsewhere"], "row": np.arange(len(ids) + 1)})
    which = np.full(len(meta), 2500.0)
    which[-1] = np.nan
    return meta, which


def _sample(meta: pd.DataFrame, which: np.ndarray, cap: int, seed: int = 1) -> pd.DataFrame:
    return meta.iloc[I.fitted_turns(meta, which, [2400, 2500], cap, seed)[2500]]


def test_a_bucket_within_the_cap_is_fitted_whole() -> None:
    meta, which = _bucket([30, 40, 50])
    for cap in (0, 120, 10**6):
        at = I.fitted_turns(meta, which, [2400, 2500], cap, 1)
        assert at[2500].tolist() == list(range(120))
        assert at[2400].tolist() == []


def test_a_large_bucket_is_sampled_by_whole_games_up_to_the_cap() -> None:
    rng = np.random.default_rng(5)
    lengths = rng.integers(10, 60, size=400).tolist()
    meta, which = _bucket(lengths)
    cap = 3000
    taken = _sample(meta, which, cap)
    # at least the cap, short of it by less than one game more
    assert cap <= len(taken) < cap + max(lengths)
    # whole games: every drawn game with all its turns, in the turns' own order
    counts = taken["game_id"].value_counts()
    assert all(counts[g] == lengths[int(g[5:])] for g in counts.index)
    assert taken["row"].is_monotonic_increasing
    assert "elsewhere" not in set(taken["game_id"])
    # the same games whatever the order of the turns (as partitions would give them)
    shuffled = meta.iloc[rng.permutation(len(meta))].reset_index(drop=True)
    again = _sample(shuffled, np.where(shuffled["game_id"] == "elsewhere", np.nan, 2500.0), cap)
    assert set(again["game_id"]) == set(taken["game_id"])
    # another seed draws other games
    other = _sample(meta, which, cap, seed=2)
    assert set(other["game_id"]) != set(taken["game_id"])


def test_the_sample_is_the_games_of_lowest_hash() -> None:
    meta, which = _bucket([20] * 50)
    taken = set(_sample(meta, which, 200, seed=7)["game_id"])
    games = {g for g in meta["game_id"] if g != "elsewhere"}
    ranked = sorted(games, key=lambda g: (I._game_rank(7, g), g))
    assert taken == set(ranked[:10])


def test_a_calibration_fitted_on_samples_recovers_the_agents(small_site) -> None:  # type: ignore[no-untyped-def]
    """Seven buckets of 3,000 simulated turns, each fitted on 1,000: the c line and the
    Elo(s) line come back within the bounds the fit on every turn meets, and the buckets say
    what was fitted."""
    sp, meta = _simulated_calibration_data(small_site.moves, per_bucket=3000)
    base = dataclasses.replace(IntrinsicSection(), milepost_min=2000, min_turns=500)
    whole = I.calibrate(sp, meta, dataclasses.replace(base, calibration_max_turns=0))
    sampled = I.calibrate(sp, meta, dataclasses.replace(base, calibration_max_turns=1000))
    assert whole.usable and sampled.usable
    for b in sampled.buckets:
        if b.fit is None:
            assert b.fitted == 0
            continue
        assert b.turns == 3000 and 1000 <= b.fitted < 1030  # games of 30 turns
    assert all(b.fitted == b.turns for b in whole.buckets if b.fit is not None)
    assert sampled.c_line is not None and whole.c_line is not None
    assert sampled.elo_line is not None and whole.elo_line is not None
    # the tolerances of the calibration test on every turn (1,500 per bucket there)
    assert sampled.c_line(2500) == pytest.approx(TRUE_C(2500), abs=0.08)
    for b in sampled.buckets:
        if b.refit is not None:
            assert abs(sampled.elo_line(b.refit.s) - b.mean_elo) < 120
    for s in (0.10, 0.16, 0.22):  # the buckets' agents span s = 0.10 … 0.22
        assert abs(sampled.elo_line(s) - TRUE_ELO(s)) < 120
        assert abs(whole.elo_line(s) - TRUE_ELO(s)) < 120
    assert sampled.c_line != whole.c_line  # the sample was fitted, not every turn
