"""Shipped analysis is what the local engine computes: a sample re-analysed must match exactly
(where the local engine is the same version; otherwise the test says so and skips)."""

from __future__ import annotations

import asyncio
import gzip
import json
from pathlib import Path
from typing import Any

import pytest

from site_builder.analysis.engine import PositionTask, analyse_task, open_engine
from site_builder.analysis.exchange import read_header, spec_from_dict
from site_builder.analysis.spec import move_key, pv_key
from site_builder.analysis.stage import identify_engine
from tests.conftest import DATA, STOCKFISH, requires_engine

pytestmark = [requires_engine, pytest.mark.engine]
ROOT = Path(__file__).resolve().parent.parent
SHIPPED = sorted(
    [
        *(ROOT / "content/analysis").glob("*.jsonl.gz"),
        *(DATA / "small-site/analysis").glob("*.jsonl.gz"),
    ]
)
SAMPLE = 12


def _sample(path: Path) -> list[dict[str, Any]]:
    with gzip.open(path, "rt", encoding="utf-8") as f:
        f.readline()
        entries = [json.loads(line) for line in f]
    step = max(1, len(entries) // SAMPLE)
    return entries[::step][:SAMPLE]


def _without_time(value: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in value.items() if k != "time"}


@pytest.mark.parametrize("path", SHIPPED, ids=[p.name for p in SHIPPED])
def test_shipped_evaluations_are_reproduced(path: Path) -> None:
    spec = spec_from_dict(read_header(path)["spec"])
    assert STOCKFISH is not None
    local = identify_engine(STOCKFISH)
    if local != spec.engine:
        pytest.skip(f"shipped analysis is from {spec.engine}; this machine has {local}")

    async def run() -> list[tuple[str, Any, Any]]:
        protocol = await open_engine(STOCKFISH, spec.hash_mb, spec.threads)
        out = []
        try:
            for entry in _sample(path):
                position = entry["p"]
                if "m" in entry:
                    task = PositionTask(position, False, (entry["m"],))
                    key = move_key(spec, position, entry["m"])
                else:
                    task = PositionTask(position, True, ())
                    key = pv_key(spec, position)
                got = await analyse_task(protocol, spec, task)
                out.append((position, _without_time(entry["v"]), _without_time(got[key])))
        finally:
            await protocol.quit()
        return out

    for position, shipped, again in asyncio.run(run()):
        assert again == shipped, position
