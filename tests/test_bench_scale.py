"""The scale benchmark's memory by phase (bench/scale.py)."""

from bench.scale import PhasePeak, _peaks_text, phase_peaks


def test_each_phase_gets_the_peak_sampled_in_it() -> None:
    # 1 s of start-up, then ingest 2 s, metrics 3 s, render 4 s: the process ends at 10 s.
    trace = [
        (0.5, 900, 900),
        (1.5, 10, 10),
        (2.9, 20, 12),
        (3.0, 35, 15),
        (5.9, 30, 30),
        (6.0, 5, 5),
        (9.9, 40, 25),
    ]
    peaks = phase_peaks(trace, {"ingest": 2.0, "metrics": 3.0, "render": 4.0}, wall=10.0)
    # The start-up's 900 is none's; the build's own RSS is the one at the tree's peak (at
    # 5.9 s the build held more, 30, but the tree less).
    assert peaks == {
        "ingest": PhasePeak(tree=20, build=12),
        "metrics": PhasePeak(tree=35, build=15),
        "render": PhasePeak(tree=40, build=25),
    }


def test_a_phase_without_a_sample_has_no_peak() -> None:
    peaks = phase_peaks([(5.0, 7, 3)], {"ingest": 0.01, "render": 5.0}, wall=5.5)
    assert peaks == {"ingest": None, "render": (7, 3)}
    assert _peaks_text(peaks) == "ingest n/a (no sample), render 0.00 (0.00)"


def test_the_peaks_text_gives_the_builds_part() -> None:
    peaks: dict[str, PhasePeak | None] = {
        "metrics": PhasePeak(2_660_000_000, 1_210_000_000),
        "render": PhasePeak(2_920_000_000, 1_600_000_000),
    }
    assert _peaks_text(peaks) == "metrics 2.66 (1.21), render 2.92 (1.60)"
