from __future__ import annotations

import contextlib
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from site_builder.stats import BuildStats

DATA = Path(__file__).parent / "data"
STOCKFISH = shutil.which("stockfish") or (
    "/usr/games/stockfish" if Path("/usr/games/stockfish").exists() else None
)


@pytest.fixture
def data_dir() -> Path:
    return DATA


def make_content(
    root: Path, files: dict[str, Path | str], site_toml: str = "", aliases: Path | None = None
) -> Path:
    """A content folder under ``root`` with the given games files (path or text)."""
    content = root / "content"
    games = content / "games"
    games.mkdir(parents=True)
    for name, src in files.items():
        target = games / name
        target.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(src, Path):
            shutil.copyfile(src, target)
        else:
            target.write_text(src, encoding="utf-8")
    (content / "site.toml").write_text(site_toml, encoding="utf-8")
    if aliases is not None:
        shutil.copyfile(aliases, content / "aliases.toml")
    return content


def build_quietly(content: Path, out: Path, cache_dir: Path) -> BuildStats:
    """A full build of ``content`` into ``out`` with its own settings, no progress or echo."""
    from site_builder.build import build
    from site_builder.config import load_settings

    return build(
        content,
        out,
        load_settings(content),
        cache_dir=cache_dir,
        progress=False,
        echo=lambda s: None,
    )


requires_engine = pytest.mark.skipif(STOCKFISH is None, reason="Stockfish is not installed")


@pytest.fixture(scope="session")
def small_site(tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    """SiteData of tests/data/small-site: 188 real games with their shipped depth-6 analysis.

    Built once per test session through the real pipeline (ingest, diskcache, import of the
    shipped export; the engine is started only to read its name). Metric families are not
    computed: call ``family.compute(site)`` in the test.
    """
    from site_builder.analysis.stage import prepare
    from site_builder.config import load_settings
    from site_builder.stats import BuildStats

    content = DATA / "small-site"
    cache = tmp_path_factory.mktemp("small-site-cache")
    settings = load_settings(content)
    site = prepare(
        content, settings, BuildStats(), cache_dir=cache, progress=False, echo=lambda s: None
    )
    assert site is not None
    return site


@contextlib.contextmanager
def local_cluster() -> Iterator[Any]:
    """A Dask cluster of two single-threaded worker processes on loopback, no dashboard
    (the tests' stand-in for ``--scheduler tcp://HOST:8786``)."""
    from distributed import LocalCluster

    with LocalCluster(
        n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1", dashboard_address=None
    ) as cluster:
        yield cluster
