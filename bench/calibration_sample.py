"""The calibration's sample of a large bucket (``[intrinsic] calibration_max_turns``): what it
costs in precision, and what it saves in time.

Turns are simulated from a known agent (s = 0.10, c = 0.50) on the demo's real spreads (its
calibration turns, with the censored tail), ``SAMPLES`` times at the default cap of 30,000
turns; each is fitted freely (s, c) and with c fixed (the refit that places a bucket on the
Elo(s) line). Then one bucket of four times the cap is fitted whole and on its sample.

Judged by: the relative standard deviation of the refitted s at the cap (the methodology page
quotes it), and the ratio of the fit times whole / sampled for a bucket of 4 × the cap.
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path

import numpy as np

SAMPLES = 8
S, C = 0.10, 0.50


def main() -> dict[str, float]:
    import pandas as pd

    from bench.intrinsic_table import demo_tables
    from site_builder.config import IntrinsicSection
    from site_builder.metrics import intrinsic

    cap = IntrinsicSection().calibration_max_turns
    with tempfile.TemporaryDirectory(prefix="bench-sample-") as tmp:
        base = demo_tables(Path(tmp))[0][1][0]  # the calibration table's spreads
    print(f"Calibration sample: {SAMPLES} samples of {cap} turns simulated at s = {S}, c = {C}")
    rows = []
    for k in range(SAMPLES):
        rng = np.random.default_rng(1000 + k)
        sim = intrinsic.simulate(base.take(rng.choice(len(base), cap)), S, C, rng)
        free = intrinsic.fit_agent(sim, "percentile")
        refit = intrinsic.fit_s(sim, C, "percentile")
        rows.append((free.s, free.c, refit.s))
    a = np.array(rows)
    rel = a.std(axis=0, ddof=1) / np.array([S, C, S])
    print(
        f"  relative sd: free s {100 * rel[0]:.1f}%, free c {100 * rel[1]:.1f}%, "
        f"refitted s {100 * rel[2]:.1f}%"
    )
    rng = np.random.default_rng(7)
    games = 4 * cap // 40
    big = intrinsic.simulate(base.take(rng.choice(len(base), games * 40)), S, C, rng)
    meta = pd.DataFrame({"game_id": np.repeat([f"g{i:05d}" for i in range(games)], 40)})
    which = np.full(len(big), 2500.0)
    taken = intrinsic.fitted_turns(meta, which, [2500], cap, IntrinsicSection().seed)[2500]
    seconds = []
    for sp in (big, big.take(taken)):
        clock = time.perf_counter()
        fit = intrinsic.fit_agent(sp, "percentile")
        seconds.append(time.perf_counter() - clock)
        print(f"  {len(sp)} turns: s = {fit.s:.4f}, c = {fit.c:.4f} in {seconds[-1]:.1f} s")
    ratio = seconds[0] / seconds[1]
    print(
        f"RATIO whole / sampled fit time, a bucket of {len(big)} turns: {ratio:.1f}x; the "
        f"refitted s scatters by {100 * rel[2]:.1f}% at {cap} turns"
    )
    return {"refit_s_rel_sd": float(rel[2]), "speedup": ratio}
