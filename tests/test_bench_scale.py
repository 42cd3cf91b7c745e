"""The scale benchmark's memory by phase (bench/scale.py)."""

from bench.scale import phase_peaks


def test_each_phase_gets_the_peak_sampled_in_it() -> None:
    # 1 s of start-up, then ingest 2 s, metrics 3 s, render 4 s: the process ends at 10 s.
    trace = [(0.5, 900), (1.5, 10), (2.9, 20), (3.0, 35), (5.9, 30), (6.0, 5), (9.9, 40)]
    peaks = phase_peaks(trace, {"ingest": 2.0, "metrics": 3.0, "render": 4.0}, wall=10.0)
    assert peaks == {"ingest": 20, "metrics": 35, "render": 40}  # the start-up's 900 is none's


def test_a_phase_without_a_sample_has_no_peak() -> None:
    assert phase_peaks([(5.0, 7)], {"ingest": 0.01, "render": 5.0}, wall=5.5) == {
        "ingest": None,
        "render": 7,
    }
