"""Ferreira's gain distribution, as Alliot extends it (METHODS.md section 3).

Each player-year has a distribution R of its conformance δ in 1 cp bins (0 … D cp). In a move
pair between A and B the gain of A is ``δ_B − δ_A``; its distribution is the
cross-correlation ``G(g) = Σ_m R_A(m)·R_B(m + g)``. ``n0`` further convolutions of G with
itself give the distribution of S, the sum of ``n0 + 1`` independent pair gains (``n0 = 0``
is Ferreira's own reading), and A's expected score is ``Σ_g S(g)·e(g)`` for a gain vector e:

- "alliot": ``e = 0.5`` for ``|g| ≤ b``, 1 above, 0 below (Alliot's best: n0 = 29, b = 2.2);
- "step": Ferreira's ``(0, …, 0, 0.5, 1, …, 1)``: ½ at g = 0 exactly;
- "tanh": ``0.5·(1 + tanh(a·g))``, g in pawns (Alliot's a = 1.16).

Every vector satisfies ``e(−g) = 1 − e(g)``, so a player against themself scores ½ and
swapping the players gives 1 − score. The convolutions run in Fourier space on a period long
enough that nothing wraps around.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

VECTORS = ("alliot", "step", "tanh")


def distribution(deltas_cp: np.ndarray, weights: np.ndarray, max_cp: int) -> np.ndarray:
    """Weighted distribution of δ in 1 cp bins 0 … max_cp (δ rounded, clipped at max_cp)."""
    d = np.clip(np.rint(np.asarray(deltas_cp, dtype=float)), 0, max_cp).astype(int)
    hist = np.bincount(d, weights=np.asarray(weights, dtype=float), minlength=max_cp + 1)
    total = hist.sum()
    if total <= 0:
        raise ValueError("distribution needs at least one move with a positive weight")
    return np.asarray(hist / total, dtype=float)


def gain_vector(kind: str, gains_cp: np.ndarray, b_pawns: float, tanh_a: float) -> np.ndarray:
    """e(g) for gains g in cp."""
    g = np.asarray(gains_cp, dtype=float)
    if kind == "alliot":
        b = b_pawns * 100
        return np.where(g > b, 1.0, np.where(g < -b, 0.0, 0.5))
    if kind == "step":
        return np.where(g > 0, 1.0, np.where(g < 0, 0.0, 0.5))
    if kind == "tanh":
        return np.asarray(0.5 * (1 + np.tanh(tanh_a * g / 100)), dtype=float)
    raise ValueError(f"gain vector must be one of {VECTORS}, got {kind!r}")


@dataclass(frozen=True)
class GainModel:
    """Settings of the predictor and the Fourier period they need."""

    max_cp: int
    n0: int
    vector: str
    b_pawns: float
    tanh_a: float

    def __post_init__(self) -> None:
        if self.n0 < 0:
            raise ValueError(f"n0 must be 0 or more, got {self.n0}")
        if self.max_cp < 1:
            raise ValueError(f"max_cp must be at least 1, got {self.max_cp}")
        if self.vector not in VECTORS:
            raise ValueError(f"gain vector must be one of {VECTORS}, got {self.vector!r}")

    @property
    def period(self) -> int:
        """A power of two above the support of S, −(n0+1)·D … (n0+1)·D."""
        need = 2 * (self.n0 + 1) * self.max_cp + 1
        return 1 << math.ceil(math.log2(need))

    def spectrum(self, dist: np.ndarray) -> np.ndarray:
        """The real FFT of one player-year's distribution at the model's period."""
        if len(dist) != self.max_cp + 1:
            raise ValueError(f"distribution has {len(dist)} bins, the model {self.max_cp + 1}")
        return np.fft.rfft(dist, n=self.period)

    def weights(self) -> np.ndarray:
        """e(g) on the period's circular index (index i is g = i, or i − period past half)."""
        n = self.period
        idx = np.arange(n)
        g = np.where(idx <= n // 2, idx, idx - n)
        return gain_vector(self.vector, g, self.b_pawns, self.tanh_a)

    def sum_distribution(self, spec_a: np.ndarray, spec_b: np.ndarray) -> np.ndarray:
        """Distribution of S (A's summed gain) on the circular index."""
        s = np.fft.irfft(self.sum_spectrum(spec_a, spec_b), n=self.period)
        return np.asarray(np.clip(s, 0.0, None), dtype=float)

    def sum_spectrum(self, spec_a: np.ndarray, spec_b: np.ndarray) -> np.ndarray:
        """F(S): F(G)^(n0+1) with F(G) = conj(F(R_A))·F(R_B), i.e.
        G(g) = Σ_m R_A(m)·R_B(m + g). Works row-wise on stacks of spectra."""
        pair = np.conj(spec_a) * spec_b
        return int_power(pair, self.n0 + 1)

    def weights_spectrum(self) -> np.ndarray:
        """rfft of e(g), for scoring in Fourier space."""
        return np.fft.rfft(self.weights())

    def score(self, spec_a: np.ndarray, spec_b: np.ndarray, weights_spec: np.ndarray) -> float:
        """A's expected score against B (``weights_spec`` from :meth:`weights_spectrum`)."""
        return float(self.scores(spec_a, spec_b, weights_spec))

    def scores(
        self, spec_a: np.ndarray, spec_b: np.ndarray, weights_spec: np.ndarray
    ) -> np.ndarray:
        """Σ_g S(g)·e(g) / Σ_g S(g) by Parseval, without going back from Fourier space;
        ``spec_b`` may be a stack (one row per opponent)."""
        fs = self.sum_spectrum(spec_a, spec_b)
        n = self.period
        # Σ_g x(g)·y(g) = (X_0·Y_0 + X_{n/2}·Y_{n/2} + 2·Re Σ_{0<k<n/2} X_k·conj(Y_k)) / n
        inner = (
            fs[..., 0].real * weights_spec[0].real
            + fs[..., -1].real * weights_spec[-1].real
            + 2 * (fs[..., 1:-1] @ np.conj(weights_spec[1:-1])).real
        ) / n
        total = fs[..., 0].real
        return np.asarray(inner / total, dtype=float)


#: Frequencies per block of :func:`score_matrix` (a few MB of temporaries per block).
SCORE_BLOCK = 2048


def score_matrix(model: GainModel, spectra: np.ndarray) -> np.ndarray:
    """Every player-year (rows of ``spectra``) against every other: A's expected score.

    As F(S) = (conj(F_A)·F_B)^(n0+1) = conj(F_A^(n0+1))·F_B^(n0+1), each spectrum is raised to
    the power once and every pair costs one product (a matrix product for all of them). The
    frequencies are taken in fixed blocks, so the temporaries stay small.
    """
    spectra = np.asarray(spectra)
    w = model.weights_spectrum()
    n = model.period
    width = spectra.shape[1]
    k = model.n0 + 1
    p0, p_last = int_power(spectra[:, 0], k), int_power(spectra[:, -1], k)
    first = np.outer(np.conj(p0), p0).real
    last = np.outer(np.conj(p_last), p_last).real
    # Re Σ_k conj(P_a,k)·conj(W_k)·P_b,k, with real matrix products only
    middle = np.zeros((len(spectra), len(spectra)))
    for lo in range(1, width - 1, SCORE_BLOCK):
        hi = min(lo + SCORE_BLOCK, width - 1)
        right = int_power(spectra[:, lo:hi], k)
        left = np.conj(right) * np.conj(w[lo:hi])
        middle += np.ascontiguousarray(left.real) @ np.ascontiguousarray(right.real).T
        middle -= np.ascontiguousarray(left.imag) @ np.ascontiguousarray(right.imag).T
    inner = (first * w[0].real + last * w[-1].real + 2 * middle) / n
    return np.asarray(inner / first, dtype=float)


def int_power(z: np.ndarray, n: int) -> np.ndarray:
    """z**n for a whole n ≥ 1 by repeated squaring, in place (numpy's complex ** is slower)."""
    if n < 1:
        raise ValueError(f"n must be at least 1, got {n}")
    result: np.ndarray | None = None
    base = np.array(z, copy=True)
    while n:
        if n & 1:
            if result is None:
                result = base.copy()
            else:
                result *= base
        n >>= 1
        if n:
            base *= base
    assert result is not None
    return result


def expected_score(model: GainModel, dist_a: np.ndarray, dist_b: np.ndarray) -> float:
    """A's expected score against B from their δ distributions (1 cp bins)."""
    return model.score(model.spectrum(dist_a), model.spectrum(dist_b), model.weights_spectrum())
