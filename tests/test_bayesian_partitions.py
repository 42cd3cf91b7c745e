"""Bayesian skill over the move store's partitions: the same numbers as over one move table,
whatever the partitions and the workers."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from site_builder.analysis.stage import write_store
from site_builder.families import bayesian
from site_builder.memo import Memo
from site_builder.metrics import bayesian as B
from site_builder.metrics import intrinsic as I
from site_builder.partitions import Partitions
from site_builder.sitedata import BuildState, SiteData
from site_builder.store import MoveStore, partition_of

FIELDS = ("status", "turns", "sides", "groups", "curves", "elo_line", "mapping_status")
FIELDS += ("players", "years", "outcomes")


def _moves(small_site: SiteData) -> pd.DataFrame:
    """The small site's moves less every fifth game, with three engine lines only for the
    players of one partition (of five): their turns are narrower than the others'."""
    moves = small_site.moves
    ids = sorted(pd.unique(moves["game_id"]))
    kept = moves[~moves["game_id"].isin(ids[::5])].reset_index(drop=True)
    narrow = kept["player"].map(lambda p: partition_of(p, 5) == 0).to_numpy()
    for col in ("line_scores", "line_moves"):
        kept[col] = [v[:3] if n else v for v, n in zip(kept[col], narrow, strict=True)]
    return kept


def _site(
    small_site: SiteData,
    moves: pd.DataFrame,
    folder: Path,
    partitions: int,
    workers: int,
    **bayes: Any,
) -> Any:
    """The small site with Elo groups that hold turns (its Elos are 2612–2865), calibrated on
    one file's games, with ``moves`` in a store of ``partitions``."""
    store = MoveStore(folder / f"moves-{partitions}", partitions)
    write_store(store, moves, {gid: gid for gid in pd.unique(moves["game_id"])})
    s = small_site.settings
    settings = dataclasses.replace(
        s,
        intrinsic=dataclasses.replace(
            s.intrinsic,
            milepost_min=2600,
            milepost_max=2850,
            milepost_step=50,
            calibration_games=("tata*.pgn",),
        ),
        bayesian=dataclasses.replace(
            s.bayesian, group_width=40, min_turns=50, group_min_turns=100, **bayes
        ),
    )
    return dataclasses.replace(
        small_site,
        settings=settings,
        state=BuildState(facts={}),
        cache=Memo(),
        partitions=Partitions(store, Memo(), workers),
    )


def _same(a: Any, b: Any) -> None:
    for name in FIELDS:
        x, y = getattr(a, name), getattr(b, name)
        if isinstance(x, pd.DataFrame):
            assert list(x.columns) == list(y.columns) and list(x.dtypes) == list(y.dtypes), name
            for col in x.columns:
                assert [repr(v) for v in x[col]] == [repr(v) for v in y[col]], (name, col)
        else:
            assert repr(x) == repr(y), name


def test_partitions_and_workers_give_the_same_numbers(small_site, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    moves = _moves(small_site)
    one = bayesian.compute(_site(small_site, moves, tmp_path, 1, 1))
    assert one.status == "" and (one.groups["turns"] > 0).sum() >= 3 and one.outcomes
    assert len(one.players) > 10 and len(one.years) > 10
    split = _site(small_site, moves, tmp_path, 7, 2)
    many = bayesian.compute(split)
    assert len(split.partitions.parts()) == 7
    _same(one, many)


def test_numbers_are_those_of_one_move_table(small_site, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """Every game side's posterior and every Elo group's, to the last bit, as computed from
    the whole move table at once (the turns in table order, all as wide as the widest: a
    partition of narrower turns is padded). No spec and more lines than the analysis lists:
    the width is found from the turns."""
    moves = _moves(small_site)
    site = _site(small_site, moves, tmp_path, 5, 1, lines=12)
    site = dataclasses.replace(site, spec=None)
    res = bayesian.compute(site)
    cfg = site.settings.bayesian
    cand, meta = B.turns_from_moves(moves[moves["time_class"] == "classical"], cfg)
    assert cand.r.shape[1] == 11  # ten lines and the played move
    narrow = meta["player"].map(lambda p: partition_of(p, 5) == 0).to_numpy()
    assert narrow.any() and cand.valid[narrow].sum(axis=1).max() <= 4
    assert res.turns == len(cand)
    # the store's games only (every fifth game of the site is not in it)
    assert set(res.sides["game_id"]) == set(meta["game_id"]) < set(small_site.moves["game_id"])
    sides = res.sides.set_index(["game_id", "player"])
    at = meta.groupby(["game_id", "player"], sort=True).indices
    assert len(at) == len(sides)
    for (gid, player), idx in at.items():
        p = B.posterior(cand.take(np.sort(idx)), cfg)
        got = sides.loc[(gid, player)]
        assert (got["c"], got["sd"], got["c_lo"], got["c_hi"]) == (p.mean, p.sd, p.lo, p.hi)
    icfg = site.settings.intrinsic
    mileposts = list(range(icfg.milepost_min, icfg.milepost_max + 1, icfg.milepost_step))
    in_set = meta["game_id"].isin(site.calibration_game_ids).to_numpy()
    pe, oe = I.elo_values(meta["player_elo"]), I.elo_values(meta["opponent_elo"])
    which = np.where(in_set, I.bucket_of(pe, oe, mileposts, cfg.group_width), np.nan)
    used = res.groups[res.groups["turns"] > 0]
    assert len(used) >= 3
    for row in used.itertuples():
        idx = np.flatnonzero(which == row.milepost)
        p = B.posterior(cand.take(idx), cfg)
        assert row.turns == len(idx)
        assert (row.c, row.sd, row.c_lo, row.c_hi) == (p.mean, p.sd, p.lo, p.hi)
        assert row.mean_elo == pe[idx].mean()
