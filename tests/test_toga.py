"""Toga II (Debian ``toga2``, the engine of seed 004) as the reference engine through the
same [analysis] settings, at a very low limit."""

from __future__ import annotations

import asyncio
import re
import shutil
from pathlib import Path

import pytest

from site_builder.analysis.engine import open_engine
from site_builder.analysis.stage import prepare
from site_builder.config import BayesianSection, IntrinsicSection, load_settings
from site_builder.metrics import bayesian, intrinsic
from site_builder.stats import BuildStats
from tests.conftest import make_content

TOGA = shutil.which("toga2") or ("/usr/games/toga2" if Path("/usr/games/toga2").exists() else None)
pytestmark = [
    pytest.mark.skipif(TOGA is None, reason="toga2 is not installed (apt-get install toga2)"),
    pytest.mark.engine,
]


def test_toga_plays_without_its_book() -> None:
    assert TOGA is not None

    async def options() -> object:
        protocol = await open_engine(TOGA, 16, 1)
        try:
            return protocol.config.get("OwnBook")
        finally:
            await protocol.quit()

    assert asyncio.run(options()) is False


def test_toga_analysis_feeds_both_models(tmp_path: Path) -> None:
    src = Path(__file__).parent / "data/fixtures/pgn2tex-examples/WorldChamp1886.pgn"
    text = src.read_text(encoding="utf-8").replace("\r\n", "\n")
    game = re.split(r"\n\s*\n(?=\[Event )", text)[0] + "\n"
    toml = f'[analysis]\nengine = "{TOGA}"\ndepth = 2\nmultipv = 4\nworkers = 1\nhash_mb = 4\n'
    content = make_content(tmp_path, {"one.pgn": game}, toml)
    site = prepare(
        content,
        load_settings(content),
        BuildStats(),
        cache_dir=tmp_path / "cache",
        progress=False,
        echo=lambda s: None,
    )
    assert site is not None and site.spec is not None
    # the engine's own name is part of every cache key
    assert site.spec.engine.startswith("Toga II")
    assert site.spec.key.startswith("Toga II")
    moves = site.moves
    assert len(moves) > 20
    assert moves["line_scores"].map(len).max() == 4
    sp, _ = intrinsic.turns_from_moves(moves, IntrinsicSection(lines=4))
    assert len(sp) > 10 and sp.valid.sum(axis=1).min() >= 2
    cand, _ = bayesian.turns_from_moves(moves, BayesianSection(lines=4))
    post = bayesian.posterior(cand, BayesianSection(lines=4))
    assert post.lo <= post.mean <= post.hi
