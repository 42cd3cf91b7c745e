"""The intrinsic family over the move store's partitions: the same numbers however the players
are split (the calibration's pooled turns, the events' pooled units), and the per-player fits
reused from the last build while a partition and the calibration are unchanged."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

from site_builder.families import intrinsic as family
from site_builder.metrics import intrinsic as I
from tests.conftest import requires_engine

pytestmark = [requires_engine]

#: The small site's Elo range (2612–2865) is too narrow to calibrate: its buckets are fitted
#: and the lines set by hand, as in test_intrinsic_pages.
LINES = (I.Line(0.1, 0.0002, 4), I.Line(3300.0, -2000.0, 4))
BANDS = {
    "milepost_min": 2600,
    "milepost_max": 2850,
    "milepost_step": 50,
    "milepost_width": 40,
    "min_turns": 200,
    "bootstrap": 60,
}


@pytest.fixture
def fixed_lines(monkeypatch: pytest.MonkeyPatch) -> None:
    real = I.calibrate

    def fake(sp, meta, cfg, method=None, run=I.serial, fits=None, population=None):  # type: ignore[no-untyped-def]
        cal = real(sp, meta, cfg, method, run, fits, population)
        return dataclasses.replace(cal, c_line=LINES[0], elo_line=LINES[1], status="")

    monkeypatch.setattr(I, "calibrate", fake)


def _split(small_site, tmp: Path, partitions: int, memo=None):  # type: ignore[no-untyped-def]
    """The small site with its move table in ``partitions`` partitions."""
    from site_builder.analysis.stage import write_store
    from site_builder.memo import Memo
    from site_builder.partitions import Partitions
    from site_builder.store import MoveStore

    store = MoveStore(tmp / f"moves-{partitions}", partitions)
    write_store(store, small_site.moves, {g: g for g in small_site.moves["game_id"].unique()})
    settings = dataclasses.replace(
        small_site.settings, intrinsic=dataclasses.replace(small_site.settings.intrinsic, **BANDS)
    )
    cache = Memo(store=memo, code="c")
    if memo is not None:
        cache.game_keys = {g: g for g in small_site.moves["game_id"].unique()}
    return dataclasses.replace(
        small_site,
        settings=settings,
        state=dataclasses.replace(small_site.state, results={}),
        cache=cache,
        partitions=Partitions(store, cache, 1),
    )


def _frames(res: family.IntrinsicResult) -> dict[str, pd.DataFrame]:
    return {
        "players": res.players,
        "years": res.years,
        "events": res.events,
        "event_players": res.event_players,
        "buckets": res.buckets,
    }


@pytest.mark.usefixtures("fixed_lines")
def test_the_same_ratings_from_one_partition_or_many(small_site, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    one = family.compute(_split(small_site, tmp_path, 1))
    many_site = _split(small_site, tmp_path, 7)
    assert len(many_site.partitions.parts()) == 7
    many = family.compute(many_site)
    assert one.rated and many.rated
    rated = one.events[one.events["status"] == ""]
    assert len(rated) == 3 and (one.players["status"] == "").sum() > 20
    # Every number to the bit: the calibration pools its turns in move-table order, and
    # an event pools its players' units from their partitions.
    assert repr(one.calibration) == repr(many.calibration)  # repr: every float exactly
    assert repr(one.method_fits) == repr(many.method_fits)
    for name, frame in _frames(one).items():
        pd.testing.assert_frame_equal(frame, _frames(many)[name], check_exact=True, obj=name)


@pytest.mark.usefixtures("fixed_lines")
def test_the_buckets_iprs_are_the_calibrate_commands(small_site, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """A build rates each bucket from its units' rows in the partitions' tables;
    ``site-builder calibrate`` rates no partition and makes a table of the buckets' units:
    the same calibration table, to the bit."""
    site = _split(small_site, tmp_path, 4)
    built = family.compute(site)
    alone = family.compute_calibration(site)
    assert built.buckets["ipr"].notna().sum() >= 4
    assert alone.players.empty and not alone.buckets.empty
    pd.testing.assert_frame_equal(built.buckets, alone.buckets, check_exact=True)


@pytest.mark.usefixtures("fixed_lines")
def test_the_fits_are_reused_while_partitions_and_calibration_stay(
    small_site, tmp_path: Path
) -> None:  # type: ignore[no-untyped-def]
    from site_builder.incremental import BuildCache

    with BuildCache(tmp_path / "memo") as memo:
        site = _split(small_site, tmp_path, 5, memo)
        first = family.compute(site)
        ratings = f"{family.__name__}.partition_ratings"
        assert site.partitions.computed[ratings] == 5
        again = _split(small_site, tmp_path, 5, memo)
        second = family.compute(again)
        assert again.partitions.computed[ratings] == 0  # every partition's fits reused
        for name, frame in _frames(first).items():
            pd.testing.assert_frame_equal(frame, _frames(second)[name], check_exact=True)
        # Another calibration (other settings) fits every partition again.
        other = _split(small_site, tmp_path, 5, memo)
        cfg = dataclasses.replace(other.settings.intrinsic, ipr_min_turns=151)
        other = dataclasses.replace(
            other, settings=dataclasses.replace(other.settings, intrinsic=cfg)
        )
        family.compute(other)
        assert other.partitions.computed[ratings] == 5


def _classical(small_site) -> pd.DataFrame:  # type: ignore[no-untyped-def]
    moves = small_site.moves
    return moves[moves["time_class"] == "classical"].reset_index(drop=True)


def test_pooled_calibration_turns_are_the_whole_tables(small_site) -> None:  # type: ignore[no-untyped-def]
    """The calibration's turns pooled from partitions of different widths: the whole table's
    turns in a milepost bucket, in its order and as wide as its widest turn."""
    cfg = dataclasses.replace(small_site.settings.intrinsic, **BANDS)
    moves = _classical(small_site)
    narrow = set(sorted(moves["player"].unique())[::3])
    # A third of the players with two engine lines and two legal moves: narrower turns.
    mine = moves["player"].isin(narrow)
    moves.loc[mine, "line_scores"] = moves.loc[mine, "line_scores"].map(lambda s: s[:2])
    moves.loc[mine, "legal"] = 2
    rows = [moves[moves["player"].isin(narrow) == side] for side in (True, False)]
    parts = [family.partition_turns(r, cfg) for r in rows]
    assert 0 < parts[0].width < parts[1].width
    width = max(p.width for p in parts)
    asked: list[int] = []

    def spreads_of(wanted: dict[int, Any], cfg: Any = cfg) -> dict[int, Any]:
        asked.append(sum(len(w) for w in wanted.values()))
        return {i: family.partition_bucket_spreads(rows[i], cfg, w) for i, w in wanted.items()}

    ids = set(moves["game_id"])
    pooled, meta, every = family._calibration_turns(parts, ids, width, spreads_of)
    sp, whole = I.turns_from_moves(moves, cfg)
    posts = list(range(cfg.milepost_min, cfg.milepost_max + 1, cfg.milepost_step))
    elos = [I.elo_values(whole[c]) for c in ("player_elo", "opponent_elo")]
    inside = np.flatnonzero(~np.isnan(I.bucket_of(*elos, posts, cfg.milepost_width)))
    want = sp.take(inside)
    assert len(inside) > 1000 and meta["player"].isin(narrow).any()
    for name in ("delta", "valid", "played", "counts"):
        assert np.array_equal(getattr(pooled, name), getattr(want, name)), name
    cols = ["game_id", "player", "player_elo", "opponent_elo"]
    pd.testing.assert_frame_equal(meta, whole[cols].iloc[inside].reset_index(drop=True))
    pd.testing.assert_frame_equal(every, meta)
    # With a cap, only the turns the fits read are pooled, and the calibration is the one
    # made from every turn.
    capped = dataclasses.replace(cfg, calibration_max_turns=600, min_turns=500)
    few, few_meta, every = family._calibration_turns(
        parts, ids, width, lambda w: spreads_of(w, capped), capped
    )
    pd.testing.assert_frame_equal(every, meta)
    which = I.bucket_of(
        *(I.elo_values(meta[c]) for c in ("player_elo", "opponent_elo")),
        posts,
        capped.milepost_width,
    )
    at = I.fitted_turns(meta, which, posts, 600, capped.seed)
    fitted = np.sort(np.concatenate(list(at.values())))
    assert 0 < len(fitted) < len(meta) and len(few) == len(fitted)
    # Only the fitted turns' spreads were read from the partitions.
    assert asked == [len(meta), len(fitted)]
    for name in ("delta", "valid", "played", "counts"):
        assert np.array_equal(getattr(few, name), getattr(pooled.take(fitted), name)), name
    pd.testing.assert_frame_equal(few_meta, meta.iloc[fitted].reset_index(drop=True))
    sampled = I.calibrate(few, few_meta, capped, population=every)
    assert repr(sampled) == repr(I.calibrate(pooled, meta, capped))  # repr: NaN == NaN
    assert any(0 < b.fitted < b.turns for b in sampled.buckets)


def test_an_events_units_are_gathered_as_one_table_orders_them(small_site, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """An event's units, read from the tables its players' partitions left on disk, make
    the table one table of every unit makes, to the bit."""
    from site_builder.partitions import write_side

    cfg = dataclasses.replace(small_site.settings.intrinsic, **BANDS)
    moves = _classical(small_site)
    moves = moves[moves["game_id"].isin(sorted(moves["game_id"].unique())[:6])]
    sp, meta = I.turns_from_moves(moves, cfg)
    cal = I.Calibration("percentile", 40, (), LINES[0], LINES[1], "")
    grid = I.elo_grid(cal, 2000.0, 3000.0, 50.0)
    whole = I.unit_table(sp, meta, cal, grid)
    white = meta["white"].to_numpy(dtype=bool)
    folders, keys = [], []
    for j, side in enumerate((white, ~white)):  # two "partitions": the white and black units
        part = I.unit_table(sp.take(side), meta[side].reset_index(drop=True), cal, grid)
        folder = tmp_path / f"p{j:05d}-{'0' * 24}"
        write_side(folder, {name: getattr(part, name) for name in family._SIDE_ARRAYS})
        folders.append(str(folder))
        keys.append(part.keys)
    gathered = family._SideTables(folders, keys, grid)(list(reversed(whole.keys)))
    assert gathered.keys == whole.keys and len(whole.keys) == 12
    for name in ("n", "ups", "log_p", "p_first", "ad_p", "matches", "ad_a"):
        assert np.array_equal(getattr(gathered, name), getattr(whole, name)), name


def test_edition_ratings_from_one_table_are_those_of_each_cuts_own(
    small_site, tmp_path: Path
) -> None:  # type: ignore[no-untyped-def]
    """The editions' IPRs of a partition come from one table of the units any cut rates,
    sliced at each cut, or from the partition's own table on disk: the rows are those of a
    table made from the moves up to each cut, to the bit."""
    cfg = dataclasses.replace(small_site.settings.intrinsic, **BANDS, window_months=18)
    rows = _classical(small_site)
    cal = I.Calibration("percentile", 40, (), LINES[0], LINES[1], "")
    grid = I.elo_grid(cal, 2000.0, 3000.0, 50.0)
    width = family._width(family._turns(rows, cfg)[0]) + 1
    months = rows["months"].dropna()
    players = tuple(sorted(rows["player"].unique()))
    # A quarter of the players in no cut, a quarter rated at the first cut only.
    who = (players[0::4], players[1::4], players[0::2])
    cuts = tuple((float(months.quantile(q)), p) for q, p in zip((0.3, 0.6, 0.9), who, strict=True))

    def own_table(chosen: pd.DataFrame) -> dict[str, dict[str, object]]:
        found = family._rated_units(chosen, cfg, cal, grid, width)
        if found is None:
            return {}
        return family._window_rows(found[0], cal, found[1], cfg, "")

    want = I.rated_at_cuts(rows, cuts, own_table)
    got = family.partition_edition_ratings(rows, cfg, cal, grid, width, "", cuts)
    assert [len(want[m]) for m, _ in cuts] == [len(got[m]) for m, _ in cuts]
    assert sum(r["status"] == "" for by in got.values() for r in by.values()) >= 10
    assert repr(got) == repr(want)  # every float exactly
    # From the table the partition's ratings leave on disk: only its rows are read.
    side = tmp_path / f"p00000-{'0' * 24}"
    rated = family.partition_ratings(rows, cfg, cal, grid, width, "", side=side)
    assert (side / "ups.npy").is_file() and len(rated.keys) > 0
    tabled: list[object] = []
    original = family._rated_units
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(family, "_rated_units", lambda *a: tabled.append(a) or original(*a))
        beside = family.partition_edition_ratings(rows, cfg, cal, grid, width, "", cuts, side=side)
    assert not tabled
    assert repr(beside) == repr(want)
    # Without the folder, or a unit missing from it, the rows are tabled here.
    missing = family.partition_edition_ratings(
        rows, cfg, cal, grid, width, "", cuts, side=tmp_path / "gone"
    )
    assert repr(missing) == repr(want)


def _side_arrays(folder: Path) -> dict[str, bytes]:
    return {f.name: f.read_bytes() for f in sorted(folder.iterdir())}


def test_a_partitions_table_reuses_the_units_an_earlier_build_summed(
    small_site, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:  # type: ignore[no-untyped-def]
    """After a tournament a partition is rated again from the table an earlier build left:
    only the units that are new, or whose turns changed, are summed, and the ratings and the
    table on disk are those made without it, to the bit. A table made for other agents, or
    without digests (an older version's), gives nothing."""
    cfg = dataclasses.replace(small_site.settings.intrinsic, **BANDS, window_months=18)
    rows = _classical(small_site)
    cal = I.Calibration("percentile", 40, (), LINES[0], LINES[1], "")
    grid = I.elo_grid(cal, 2000.0, 3000.0, 50.0)
    width = family._width(family._turns(rows, cfg)[0]) + 1
    games = sorted(rows["game_id"].unique())
    added, changed = games[:2], games[2]
    # The earlier build: two games not yet played, one game's last turns not yet analysed.
    before = rows[~rows["game_id"].isin(added)]
    last = before.index[before["game_id"] == changed][-6:]
    before = before.drop(index=last)
    summed: list[int] = []
    real = I._chunked_sums

    def counted(sp, starts, *args):  # type: ignore[no-untyped-def]
        summed.append(len(starts))
        return real(sp, starts, *args)

    monkeypatch.setattr(I, "_chunked_sums", counted)
    old = tmp_path / f"p00000-{'1' * 24}"
    family.partition_ratings(before, cfg, cal, grid, width, "", side=old)
    want_side = tmp_path / f"p00000-{'2' * 24}"
    want = family.partition_ratings(rows, cfg, cal, grid, width, "", side=want_side)
    units = len(want.keys)
    assert summed[-1] == units and units > 20
    got_side = tmp_path / f"p00000-{'3' * 24}"
    got = family.partition_ratings(rows, cfg, cal, grid, width, "", side=got_side, earlier=old)
    # The added games' units (two each) and the changed game's units, one per player.
    new_units = {u for u in want.keys if u[0] in added}
    assert len(new_units) == 4
    assert summed[-1] in (len(new_units) + 1, len(new_units) + 2)
    assert sum(r["status"] == "" for r in got.players.values()) >= 5
    assert repr(got) == repr(want)  # every float exactly
    assert _side_arrays(got_side) == _side_arrays(want_side)
    # Other agents: nothing is taken from the earlier table.
    other = I.Calibration("percentile", 40, (), I.Line(0.11, 0.0002, 4), LINES[1], "")
    calls = len(summed)
    family.partition_ratings(rows, cfg, other, grid, width, "", side=tmp_path / "o", earlier=old)
    assert summed[calls:] == [units]
    # Arrays of different lengths (not one table's): nothing.
    digests = np.load(old / "digest.npy")
    np.save(old / "digest.npy", digests[:-1])
    calls = len(summed)
    family.partition_ratings(rows, cfg, cal, grid, width, "", side=tmp_path / "d", earlier=old)
    assert summed[calls:] == [units]
    # An older version's table, without digests: nothing either.
    (old / "digest.npy").unlink()
    again = family.partition_ratings(
        rows, cfg, cal, grid, width, "", side=tmp_path / "a", earlier=old
    )
    assert summed[-1] == units and repr(again) == repr(want)
