"""Run the benchmarks: `python -m bench` (all) or `python -m bench overhead scaling ...`."""

from __future__ import annotations

import importlib
import sys

from bench.common import machine

ALL = [
    "overhead",
    "scaling",
    "cache",
    "peer",
    "cost",
    "incremental",
    "scale",
    "editions",
    "intrinsic_table",
    "calibration_sample",
    "wanted",
]


def main(argv: list[str]) -> int:
    names = argv or ALL
    unknown = [n for n in names if n not in ALL]
    if unknown:
        print(f"unknown benchmark {unknown[0]!r}; choose from {', '.join(ALL)}")
        return 2
    print(f"machine: {machine()}\n")
    for name in names:
        importlib.import_module(f"bench.{name}").main()
        print()
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
