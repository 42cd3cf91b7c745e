"""The intrinsic model's fast arithmetic (issue 17) gives the very numbers of the plain numpy
version it replaced, bit for bit: `unit_table`, `solve_probabilities`, `turn_stats` and
`percentile_ups` against a frozen copy of the old code (below, as of commit 6644cc4), on the
small site's real spreads and on generated ones. The IPR's grid search and parabola can turn
on the last bit, so the pages stay byte-identical only if these arrays do."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from site_builder.families import intrinsic as family
from site_builder.metrics import intrinsic as I
from tests.conftest import requires_engine

# --------------------------------------------------------------------------- the old code


def old_solve_probabilities(
    sp: I.Spreads, s: float, c: float, v0: I.FloatArray | None = None
) -> tuple[I.FloatArray, I.FloatArray]:
    z = np.where(sp.valid, np.minimum((sp.delta / s) ** c, I._Z_MAX), I._Z_MAX)
    m = sp.counts
    n = m.sum(axis=1)
    lo = np.full(len(n), -60.0)
    hi = np.log(np.log(np.maximum(n, 2.0)))
    if v0 is None:
        y_sum = (m * np.exp(-z)).sum(axis=1)
        v0 = np.log(np.maximum(np.log(np.maximum(y_sum, 1.0)), 1e-26))
    v = np.clip(v0, lo, hi)
    rows = np.arange(len(n))
    for _ in range(200):
        e = np.exp(np.minimum(v[rows, None] + z[rows], I._Z_MAX))
        w = m[rows] * np.exp(-e)
        total = w.sum(axis=1)
        h = np.log(total)
        slope = -(w * e).sum(axis=1) / total
        lo_r = np.where(h >= 0, np.maximum(lo[rows], v[rows]), lo[rows])
        hi_r = np.where(h <= 0, np.minimum(hi[rows], v[rows]), hi[rows])
        with np.errstate(divide="ignore", invalid="ignore"):
            step = v[rows] - h / slope
        bad = ~((step >= lo_r) & (step <= hi_r))
        lo[rows], hi[rows] = lo_r, hi_r
        v[rows] = np.where(bad, 0.5 * (lo_r + hi_r), step)
        rows = rows[(np.abs(h) >= 1e-12) & (hi_r - lo_r > 1e-14)]
        if len(rows) == 0:
            break
    p = m * np.exp(-np.exp(np.minimum(v[:, None] + z, I._Z_MAX)))
    return np.asarray(p / p.sum(axis=1, keepdims=True), dtype=float), v


def old_percentile_ups(p: I.FloatArray, played: I.IntArray) -> I.FloatArray:
    cols = np.arange(p.shape[1])[None, :]
    p_minus = np.where(cols < played[:, None], p, 0.0).sum(axis=1)
    p_plus = 1.0 - np.where(cols > played[:, None], p, 0.0).sum(axis=1)
    width = p_plus - p_minus
    q = I.QUANTILES[None, :]
    with np.errstate(divide="ignore", invalid="ignore"):
        frac = (q - p_minus[:, None]) / width[:, None]
    ups = np.where(p_plus[:, None] <= q, 1.0, np.where(p_minus[:, None] >= q, 0.0, frac))
    return np.asarray(np.clip(ups, 0.0, 1.0), dtype=float)


def old_turn_stats(sp: I.Spreads, s: float, c: float, p: I.FloatArray | None = None) -> I.TurnStats:
    if p is None:
        p = old_solve_probabilities(sp, s, c)[0]
    rows = np.arange(len(sp))
    d = np.where(sp.valid, sp.delta, 0.0)
    return I.TurnStats(
        ups=old_percentile_ups(p, sp.played),
        log_p=np.log(np.maximum(p[rows, sp.played], 1e-300)),
        p_first=p[:, 0],
        ad_p=(d * p).sum(axis=1),
        p=p,
    )


def old_unit_table(
    sp: I.Spreads, meta: pd.DataFrame, cal: I.Calibration, grid: I.FloatArray
) -> I.UnitTable:
    keys_frame = meta[["game_id", "player"]].astype(str)
    codes, uniques = pd.MultiIndex.from_frame(keys_frame).factorize(sort=True)
    units = len(uniques)
    order = np.argsort(codes, kind="stable")
    sorted_codes = codes[order]
    starts = np.flatnonzero(np.r_[True, sorted_codes[1:] != sorted_codes[:-1]])
    sp_sorted = sp.take(order)

    def per_unit(values: I.FloatArray) -> I.FloatArray:
        return np.asarray(np.add.reduceat(values, starts, axis=0), dtype=float)

    k_n = len(grid)
    ups = np.zeros((units, k_n, len(I.QUANTILES)))
    log_p = np.zeros((units, k_n))
    p_first = np.zeros((units, k_n))
    ad_p = np.zeros((units, k_n))
    s_grid, c_grid = cal.agent(grid)
    v: I.FloatArray | None = None
    for k in range(k_n):
        s, c = float(s_grid[k]), float(c_grid[k])
        p, v = old_solve_probabilities(sp_sorted, s, c, v)
        st_k = old_turn_stats(sp_sorted, s, c, p)
        ups[:, k] = per_unit(st_k.ups)
        log_p[:, k] = per_unit(st_k.log_p)
        p_first[:, k] = per_unit(st_k.p_first)
        ad_p[:, k] = per_unit(st_k.ad_p)
    n = per_unit(np.ones(len(sp_sorted)))
    matches = per_unit((sp_sorted.played == 0).astype(float))
    ad_a = per_unit(sp_sorted.delta_played)
    keys = [(str(g), str(p)) for g, p in uniques]
    return I.UnitTable(
        grid, keys, n, ups, log_p, p_first, ad_p, matches, ad_a, {k: i for i, k in enumerate(keys)}
    )


# --------------------------------------------------------------------------- comparing

TABLE_ARRAYS = ("grid", "n", "ups", "log_p", "p_first", "ad_p", "matches", "ad_a")


def same_bits(a: np.ndarray, b: np.ndarray) -> bool:
    """Equal shape, dtype and bytes (NaNs and the sign of zeros included)."""
    a, b = np.asarray(a), np.asarray(b)
    return a.shape == b.shape and a.dtype == b.dtype and a.tobytes() == b.tobytes()


def table_differences(new: I.UnitTable, old: I.UnitTable) -> list[str]:
    bad = [f for f in TABLE_ARRAYS if not same_bits(getattr(new, f), getattr(old, f))]
    bad += [f for f in TABLE_ARRAYS if not np.array_equal(getattr(new, f), getattr(old, f))]
    if new.keys != old.keys or new.index != old.index:
        bad.append("keys")
    return bad


#: The demo's calibration (2026-11, its 3,210 games): c(E) and Elo(s); the site's Elo grid.
DEMO_LINES = (
    I.Line(0.4130446925145824, 6.739789120598918e-05, 9),
    I.Line(3997.7384230979364, -9895.95565669651, 9),
)
GRID = np.arange(1000.0, 3600.0 + 12.5, 25.0)


def calibration(c_line: I.Line, elo_line: I.Line) -> I.Calibration:
    return I.Calibration("percentile", 40, (), c_line, elo_line, "")


# --------------------------------------------------------------------------- real spreads


@pytest.fixture(scope="module")
def real_turns(small_site):  # type: ignore[no-untyped-def]
    """The small site's selected turns, as the family makes them (wider than their widest
    turn, as a partition's turns are padded to the widest of all)."""
    cfg = small_site.settings.intrinsic
    sp, meta = family._turns(small_site.moves, cfg)
    assert len(sp) > 2000 and meta["game_id"].nunique() > 100
    return family._padded(sp, sp.lines + 2), meta


@requires_engine
def test_unit_table_is_bit_identical_on_real_spreads(real_turns) -> None:  # type: ignore[no-untyped-def]
    """Every array of the table, for the demo's 105 calibrated agents; in blocks of turns
    smaller than the turns (the block size is a cache optimisation and must not show)."""
    sp, meta = real_turns
    cal = calibration(*DEMO_LINES)
    old = old_unit_table(sp, meta, cal, GRID)
    assert table_differences(I.unit_table(sp, meta, cal, GRID), old) == []
    assert np.isfinite(old.ups).all() and old.ups.any()
    few = slice(0, 105, 13)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(I, "_BLOCK", 1000)
        blocked = I.unit_table(sp, meta, cal, GRID[few])
    unblocked = old_unit_table(sp, meta, cal, GRID[few])
    assert table_differences(blocked, unblocked) == []


@requires_engine
def test_a_one_ulp_change_is_caught(real_turns) -> None:  # type: ignore[no-untyped-def]
    """The comparison above fails for probabilities off by about one unit in the last place."""
    sp, meta = real_turns
    cal = calibration(*DEMO_LINES)
    grid = GRID[40:60]
    real = I._solve_lines

    def off(ln, s, c, v0=None):  # type: ignore[no-untyped-def]
        p, v = real(ln, s, c, v0)
        return p * (1 + 1e-15), v

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(I, "_solve_lines", off)
        perturbed = I.unit_table(sp, meta, cal, grid)
    bad = table_differences(perturbed, old_unit_table(sp, meta, cal, grid))
    assert {"ups", "log_p", "p_first", "ad_p"} <= set(bad)


@requires_engine
def test_fits_helpers_are_bit_identical_on_real_spreads(real_turns) -> None:  # type: ignore[no-untyped-def]
    """What the calibration's fits call: probabilities without a start, the turn statistics,
    the percentile ups."""
    sp, _ = real_turns
    for s, c in [(0.3, 0.48), (0.1, 0.5), (0.04, 0.66), (0.002, 6.0), (5.0, 0.05), (0.2, 2.0)]:
        p_old, v_old = old_solve_probabilities(sp, s, c)
        p_new, v_new = I.solve_probabilities(sp, s, c)
        assert same_bits(p_new, p_old) and same_bits(v_new, v_old)
        assert p_new.flags.c_contiguous
        new, old = I.turn_stats(sp, s, c), old_turn_stats(sp, s, c)
        for f in ("ups", "log_p", "p_first", "ad_p", "p"):
            assert same_bits(getattr(new, f), getattr(old, f)), f
        assert new.ups.flags.c_contiguous
        given_p = I.turn_stats(sp, s, c, p_old)
        for f in ("ups", "log_p", "p_first", "ad_p", "p"):
            assert same_bits(getattr(given_p, f), getattr(old, f)), f
        assert same_bits(I.percentile_ups(p_old, sp.played), old_percentile_ups(p_old, sp.played))


# --------------------------------------------------------------------------- generated spreads


@st.composite
def spreads(draw: st.DrawFn) -> I.Spreads:
    """Turns of 1–20 columns, sorted scaled errors (ties and zeros likely), padding after the
    valid columns, censored-tail columns standing for several moves."""
    turns = draw(st.integers(1, 30))
    width = draw(st.integers(1, 20))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    scale = draw(st.sampled_from([0.01, 0.3, 2.0, 40.0]))
    delta = np.sort(np.round(rng.exponential(scale, (turns, width)), rng.integers(0, 4)), axis=1)
    delta[:, 0] = 0.0
    valid_n = rng.integers(1, width + 1, turns)
    valid = np.arange(width)[None, :] < valid_n[:, None]
    count = np.where(valid, 1.0, 0.0)
    tail = rng.random((turns, width)) < 0.2
    count = np.where(valid & tail, rng.integers(1, 60, (turns, width)).astype(float), count)
    delta = np.where(valid, delta, np.inf)
    played = (rng.random(turns) * valid_n).astype(np.int64)
    return I.Spreads(delta, valid, played, count)


agents = st.tuples(st.floats(0.002, 5.0), st.floats(0.05, 6.0))


@settings(max_examples=150, deadline=None)
@given(spreads(), agents, st.booleans())
def test_solve_and_stats_are_bit_identical_on_generated_spreads(
    sp: I.Spreads, agent: tuple[float, float], start: bool
) -> None:
    s, c = agent
    v0 = np.linspace(-3.0, 3.0, len(sp)) if start else None
    p_old, v_old = old_solve_probabilities(sp, s, c, v0)
    p_new, v_new = I.solve_probabilities(sp, s, c, v0)
    assert same_bits(p_new, p_old) and same_bits(v_new, v_old)
    new, old = I.turn_stats(sp, s, c), old_turn_stats(sp, s, c)
    for f in ("ups", "log_p", "p_first", "ad_p", "p"):
        assert same_bits(getattr(new, f), getattr(old, f)), f


@settings(max_examples=40, deadline=None)
@given(spreads(), agents, st.integers(0, 2**32 - 1), st.integers(1, 4))
def test_unit_table_is_bit_identical_on_generated_spreads(
    sp: I.Spreads, agent: tuple[float, float], seed: int, block: int
) -> None:
    """Units of 1–6 turns in shuffled order, 12 agents around the drawn one; any block size."""
    rng = np.random.default_rng(seed)
    games = rng.integers(0, max(1, len(sp) // 3), len(sp))
    meta = pd.DataFrame(
        {"game_id": [f"g{g}" for g in games], "player": rng.choice(["A", "B"], len(sp))}
    )
    s, c = agent
    # Elo(s) and c(E) lines through the drawn agent at 2000, falling in s, rising in c.
    elo_line = I.Line(2000.0 + 1000.0 * s, -1000.0, 2)
    c_line = I.Line(c - 2000.0 * 1e-5, 1e-5, 2)
    grid = np.arange(2000.0 - 6 * 25 * s, 2000.0 + 6 * 25 * s, 25 * s)[:12]
    cal = calibration(c_line, elo_line)
    old = old_unit_table(sp, meta, cal, grid)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(I, "_BLOCK", block)
        assert table_differences(I.unit_table(sp, meta, cal, grid), old) == []
    assert table_differences(I.unit_table(sp, meta, cal, grid), old) == []


@pytest.mark.parametrize(("turns", "block"), [(8, 1), (8, 3), (16, 2), (9, 8)])
def test_blocks_of_turns_with_a_64_byte_stride(turns: int, block: int) -> None:
    """8 turns in blocks of 1: a block's column of the turns' matrix has a 64-byte stride,
    which numpy 2.4.6 negates wrongly into a strided output (the blocks are copied)."""
    rng = np.random.default_rng(turns * 10 + block)
    delta = np.sort(rng.exponential(0.5, (turns, 5)), axis=1)
    delta[:, 0] = 0.0
    sp = I.Spreads(delta, np.ones_like(delta, dtype=bool), rng.integers(0, 5, turns))
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(I, "_BLOCK", block)
        for s, c in [(0.1, 0.5), (1.0, 1.0)]:
            p_new, v_new = I.solve_probabilities(sp, s, c)
            p_old, v_old = old_solve_probabilities(sp, s, c)
            assert same_bits(p_new, p_old) and same_bits(v_new, v_old)


@settings(max_examples=200, deadline=None)
@given(st.integers(1, 300), st.integers(1, 260), st.integers(0, 2**32 - 1))
def test_line_sums_are_numpys_row_sums(turns: int, lines: int, seed: int) -> None:
    """Numbers of very different sizes and signs, so that any other order of the additions
    shows; widths past 128 take numpy's split in halves."""
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((turns, lines)) * np.exp(rng.uniform(-40, 40, (turns, lines)))
    assert same_bits(I._line_sums(np.ascontiguousarray(a.T)), a.sum(axis=1))
    stacked = np.ascontiguousarray(np.stack([a, -a / 3]).transpose(2, 0, 1))  # lines × 2 × turns
    both = I._line_sums(stacked)
    assert same_bits(both[0], a.sum(axis=1)) and same_bits(both[1], (-a / 3).sum(axis=1))


def test_line_sums_differ_from_a_plain_running_sum() -> None:
    """The check above can fail: summing the lines in order gives other bits."""
    rng = np.random.default_rng(5)
    a = rng.standard_normal((500, 15)) * np.exp(rng.uniform(-40, 40, (500, 15)))
    running = np.zeros(500)
    for i in range(15):
        running += a[:, i]
    assert not same_bits(running, a.sum(axis=1))
    assert same_bits(I._line_sums(np.ascontiguousarray(a.T)), a.sum(axis=1))


quantile_edges = st.sampled_from([0.0, 0.05, 0.35, 0.5, 0.95, 1.0, 1e-300, 1 - 1e-16, 0.7])


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.one_of(quantile_edges, st.floats(-0.1, 1.1)),
            st.one_of(quantile_edges, st.floats(-0.1, 1.1), st.just(float("nan"))),
        ),
        min_size=1,
        max_size=40,
    )
)
def test_ups_match_the_cases_as_written(pairs: list[tuple[float, float]]) -> None:
    """p− and p+ on the percentile points, equal, reversed (rounding) or NaN."""
    p_minus = np.array([a for a, _ in pairs])
    p_plus = np.array([b for _, b in pairs])
    width = p_plus - p_minus
    q = I.QUANTILES[None, :]
    # A width of 1e-300 overflows the quotient, warned about alike by the old and new code.
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        frac = (q - p_minus[:, None]) / width[:, None]
        ups = np.where(p_plus[:, None] <= q, 1.0, np.where(p_minus[:, None] >= q, 0.0, frac))
        old = np.clip(ups, 0.0, 1.0)
        new = np.ascontiguousarray(I._ups(p_minus, p_plus).T)
    assert same_bits(new, old)


def test_spreads_of_no_turn() -> None:
    sp = I.Spreads(np.zeros((0, 3)), np.zeros((0, 3), dtype=bool), np.zeros(0, dtype=np.int64))
    p_old, v_old = old_solve_probabilities(sp, 0.1, 0.5)
    p_new, v_new = I.solve_probabilities(sp, 0.1, 0.5)
    assert same_bits(p_new, p_old) and same_bits(v_new, v_old)
    new, old = I.turn_stats(sp, 0.1, 0.5), old_turn_stats(sp, 0.1, 0.5)
    for f in ("ups", "log_p", "p_first", "ad_p", "p"):
        assert same_bits(getattr(new, f), getattr(old, f)), f


@settings(max_examples=100, deadline=None)
@given(st.integers(1, 40), st.integers(1, 60), st.booleans(), st.integers(0, 2**32 - 1))
def test_percentile_score_in_place_is_the_formula(
    resamples: int, agents: int, scalar: bool, seed: int
) -> None:
    """The bootstrap's score, computed in place, is ``((Σups/n − q)²).sum()`` to the bit,
    for an array of turn counts (the bootstrap's) or one count (a fit's objective)."""
    rng = np.random.default_rng(seed)
    up = rng.uniform(0, 400, (resamples, agents, len(I.QUANTILES)))
    n = 37.0 if scalar else rng.integers(1, 400, (resamples, agents)).astype(float)
    plain = ((up / np.asarray(n)[..., None] - I.QUANTILES) ** 2).sum(axis=-1)
    assert same_bits(I.percentile_score(up, n), plain)
