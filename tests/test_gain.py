"""Ferreira's gain distribution with Alliot's n0 and b: known answers and symmetry."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from site_builder.metrics import gain


def _dist(points: dict[int, float], max_cp: int = 50) -> np.ndarray:
    d = np.zeros(max_cp + 1)
    for cp, p in points.items():
        d[cp] = p
    return d


def _model(vector: str = "alliot", n0: int = 0, b: float = 0.2, max_cp: int = 50) -> gain.GainModel:
    return gain.GainModel(max_cp, n0, vector, b, 1.16)


def test_distribution_rounds_clips_and_weighs() -> None:
    d = gain.distribution(np.array([0, 0.4, 12.6, 900]), np.array([1, 1, 2, 4]), 50)
    assert d[0] == pytest.approx(2 / 8)
    assert d[13] == pytest.approx(2 / 8)
    assert d[50] == pytest.approx(4 / 8)
    with pytest.raises(ValueError, match="positive weight"):
        gain.distribution(np.array([1.0]), np.array([0.0]), 50)


def test_always_perfect_against_always_ten_cp() -> None:
    perfect, ten = _dist({0: 1.0}), _dist({10: 1.0})
    # every pair gains A 10 cp: a step vector gives a sure win
    assert gain.expected_score(_model("step"), perfect, ten) == pytest.approx(1.0)
    # Alliot's vector with b = 0.2 pawn: one pair (+10) is within ±b → ½ …
    assert gain.expected_score(_model("alliot", n0=0), perfect, ten) == pytest.approx(0.5)
    # … three pairs (n0 = 2) sum to +30 > 20 → a win
    assert gain.expected_score(_model("alliot", n0=2), perfect, ten) == pytest.approx(1.0)
    # tanh: 0.5·(1 + tanh(1.16 · 0.1))
    want = 0.5 * (1 + math.tanh(1.16 * 0.1))
    assert gain.expected_score(_model("tanh"), perfect, ten) == pytest.approx(want)


def test_half_and_half_against_perfect_with_convolutions() -> None:
    a, b = _dist({0: 0.5, 10: 0.5}), _dist({0: 1.0})
    # gain of A: −10 or 0, each ½; step score ½·½ = ¼
    assert gain.expected_score(_model("step"), a, b) == pytest.approx(0.25)
    # two pairs (n0 = 1): S = −20 (¼), −10 (½), 0 (¼) → ⅛
    assert gain.expected_score(_model("step", n0=1), a, b) == pytest.approx(0.125)
    # Alliot's vector with b = 0.15 pawn and n0 = 1: only S = −20 is a loss → ½·¾
    m = gain.GainModel(50, 1, "alliot", 0.15, 1.16)
    assert gain.expected_score(m, a, b) == pytest.approx(0.375)


def test_fourier_sum_matches_direct_convolution() -> None:
    rng = np.random.default_rng(0)
    a = rng.random(21)
    b = rng.random(21)
    a, b = a / a.sum(), b / b.sum()
    m = gain.GainModel(20, 2, "alliot", 0.05, 1.16)
    cross = np.correlate(b, a, mode="full")  # index k ↔ g = k − 20: Σ_m a(m)·b(m + g)
    direct = np.convolve(np.convolve(cross, cross), cross)  # g from −60 to 60
    s = m.sum_distribution(m.spectrum(a), m.spectrum(b))
    circ = np.concatenate([s[-60:], s[:61]])
    assert circ == pytest.approx(direct, abs=1e-12)
    weights = gain.gain_vector("alliot", np.arange(-60, 61), 0.05, 1.16)
    assert gain.expected_score(m, a, b) == pytest.approx(float(direct @ weights))


@st.composite
def _distributions(draw: st.DrawFn) -> np.ndarray:
    values = draw(st.lists(st.floats(0, 1), min_size=31, max_size=31))
    arr = np.array(values, dtype=float) + 1e-3
    return np.asarray(arr / arr.sum(), dtype=float)


@settings(max_examples=30, deadline=None)
@given(
    a=_distributions(),
    b=_distributions(),
    vector=st.sampled_from(gain.VECTORS),
    n0=st.integers(0, 29),
)
def test_self_play_is_half_and_swapping_gives_one_minus(
    a: np.ndarray, b: np.ndarray, vector: str, n0: int
) -> None:
    m = gain.GainModel(30, n0, vector, 0.1, 1.16)
    assert gain.expected_score(m, a, a) == pytest.approx(0.5, abs=1e-9)
    s = gain.expected_score(m, a, b)
    assert 0.0 <= s <= 1.0
    assert gain.expected_score(m, b, a) == pytest.approx(1 - s, abs=1e-9)


def test_defaults_favour_the_more_accurate_player() -> None:
    rng = np.random.default_rng(1)
    good = gain.distribution(rng.exponential(15, 2000), np.ones(2000), 1000)
    bad = gain.distribution(rng.exponential(40, 2000), np.ones(2000), 1000)
    m = gain.GainModel(1000, 29, "alliot", 2.2, 1.16)
    assert m.period >= 2 * 30 * 1000 + 1
    s = gain.expected_score(m, good, bad)
    assert 0.5 < s < 1.0
    stack = m.scores(
        m.spectrum(good), np.stack([m.spectrum(bad), m.spectrum(good)]), m.weights_spectrum()
    )
    assert stack.tolist() == pytest.approx([s, 0.5])


def test_score_matrix_equals_pair_by_pair() -> None:
    rng = np.random.default_rng(2)
    m = gain.GainModel(200, 29, "alliot", 0.5, 1.16)
    dists = [gain.distribution(rng.exponential(s, 500), np.ones(500), 200) for s in (5, 20, 60)]
    specs = np.stack([m.spectrum(d) for d in dists])
    mat = gain.score_matrix(m, specs)
    for i in range(3):
        for j in range(3):
            assert mat[i, j] == pytest.approx(gain.expected_score(m, dists[i], dists[j]), abs=1e-12)
    assert np.allclose(mat + mat.T, 1.0) and np.allclose(np.diag(mat), 0.5)


def test_arguments_are_checked() -> None:
    with pytest.raises(ValueError, match="gain vector"):
        gain.GainModel(10, 0, "linear", 0.1, 1.0)
    with pytest.raises(ValueError, match="n0"):
        gain.GainModel(10, -1, "step", 0.1, 1.0)
    with pytest.raises(ValueError, match="bins"):
        _model().spectrum(np.ones(3) / 3)
    assert np.array_equal(gain.int_power(np.array([1 + 1j, 2]), 5), np.array([1 + 1j, 2]) ** 5)
