"""The families' per-partition work on a Dask cluster (``--scheduler``): the same site, byte
for byte, as a build on this machine, with the partitions computed on the cluster's workers."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from site_builder.build import build
from site_builder.config import load_settings
from tests.conftest import DATA, local_cluster

distributed = pytest.importorskip("distributed")


def _tree(folder: Path) -> dict[str, bytes]:
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in folder.rglob("*.*")}


def test_metrics_on_a_local_cluster_give_the_same_site(tmp_path: Path) -> None:
    content = tmp_path / "content"
    shutil.copytree(DATA / "small-site", content)
    settings = load_settings(content)
    quiet = {"progress": False, "echo": lambda s: None}
    here = build(content, tmp_path / "here", settings, cache_dir=tmp_path / "c1", **quiet)  # type: ignore[arg-type]
    with local_cluster() as cluster:
        there = build(
            content,
            tmp_path / "there",
            settings,
            cache_dir=tmp_path / "c2",
            scheduler=cluster.scheduler_address,
            **quiet,  # type: ignore[arg-type]
        )
        # The partitions' work (partitions._run_in_worker) ran as tasks of the cluster's scheduler.
        ran = cluster.scheduler.task_prefixes.get("run_in_worker")
        assert ran is not None and sum(ran.state_counts.values()) > 0
    assert here.partitions and there.partitions == here.partitions  # every partition computed
    assert sum(there.partitions.values()) >= 2 * len(there.partitions)
    assert _tree(tmp_path / "there") == _tree(tmp_path / "here")
