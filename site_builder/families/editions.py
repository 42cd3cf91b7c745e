"""Editions of the rating lists through time (issue 20): every list of
:data:`site_builder.updates.LISTS` as it stood on the first day of each month, quarter or
year since ``[editions] since`` (``[editions] every``), computed from the games played
before that day, as a site built then would have published it.

An edition dated D has the as-of date D − 1 day: its games are those whose date (as every
window of the site reads it, an unknown month as mid-year) is in that month or before, their
missing Elo tags are filled from those games alone, and each list is made exactly as the
site's current list with ``[site] as_of`` at that date:

- the improved Elo, rapid, blitz and fighter lists by :func:`families.results.lists_as_of`
  (the sequential runs over the edition's games);
- the quality index from the per-game qualities of the edition's games;
- the IPR and the Bayesian skill of each player's rating window, which ends at the player's
  last game: a player with no game after the edition's date has the same window as on the
  current list and keeps its value; the others are rated again over their moves up to
  then, in the partitions holding them (the site's calibration, one Elo scale for all
  editions; see the methodology page).

Each edition is kept in the build cache under a key of its date, its games (and their
analysis), the settings and code, and the calibration: a tournament played after an
edition's date changes none of that, so the edition is reused, not recomputed.
"""

from __future__ import annotations

import calendar
import math
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from site_builder.config import EDITION_PERIODS
from site_builder.families import bayesian as bayes_family
from site_builder.families import intrinsic as ipr_family
from site_builder.families import results as results_family
from site_builder.frames import among
from site_builder.incremental import digest
from site_builder.memo import Kind, entry
from site_builder.metrics import quality
from site_builder.metrics.elo_fill import fill_elos
from site_builder.model import GameRecord, PgnDate
from site_builder.partitions import value_digest
from site_builder.sitedata import SiteData, event_key
from site_builder.store import partition_of
from site_builder.updates import LISTS, listed_rows

#: A list as an edition publishes it: (player, value), rank 1 first.
Rows = tuple[tuple[str, float | None], ...]
#: Settings sections an edition's lists depend on.
SECTIONS = ("analysis", "quality", "results", "time_control", "intrinsic", "bayesian")


@dataclass(frozen=True)
class Edition:
    """Every list as it stood on one date."""

    date: str  #: "YYYY-MM-DD", the first day of a period
    as_of: str  #: the day before, as a PGN date ("YYYY.MM.DD"): the lists' as-of date
    games: int  #: games played up to the as-of date
    lists: tuple[tuple[str, Rows], ...]  #: (list key, its rows), in :data:`LISTS` order

    def rows(self, key: str) -> Rows:
        return dict(self.lists).get(key, ())


@dataclass
class EditionsResult:
    """What :func:`compute` leaves in ``site.state.results["editions"]``."""

    every: str  #: "" when the site publishes no editions
    editions: tuple[Edition, ...]  #: oldest first
    computed: tuple[str, ...]  #: the dates computed in this build (the others were reused)
    #: player → list key → ((edition date, rank, value), ...) oldest first, for the lists
    #: that listed the player in at least one edition
    players: dict[str, dict[str, tuple[tuple[str, int, float | None], ...]]] = field(
        default_factory=dict
    )


def edition_dates(every: str, since: PgnDate, as_of: PgnDate) -> list[PgnDate]:
    """The editions' dates: the first day of each period (``every``) from ``since`` on, up
    to the site's as-of date (an edition dated after it is not out yet)."""
    if not every or since.year is None or as_of.months is None:
        return []
    step = EDITION_PERIODS[every]
    y, m = since.year, since.month or 1
    if since.day not in (None, 1):  # the first period start on or after ``since``
        m += 1
    m0 = (m - 1 + step - 1) // step * step  # months since January, rounded up to a period
    y, m = y + m0 // 12, m0 % 12 + 1
    out: list[PgnDate] = []
    while True:
        d = PgnDate(y, m, 1)
        assert d.months is not None
        if d.months > as_of.months:
            return out
        out.append(d)
        m += step
        y, m = y + (m - 1) // 12, (m - 1) % 12 + 1


def day_before(d: PgnDate) -> PgnDate:
    """The last day of the month before ``d`` (``d``: a first day of a month)."""
    assert d.year is not None and d.month is not None
    y, m = (d.year, d.month - 1) if d.month > 1 else (d.year - 1, 12)
    return PgnDate(y, m, calendar.monthrange(y, m)[1])


def iso(d: PgnDate) -> str:
    return f"{d.year:04d}-{d.month:02d}-{d.day:02d}"


def compute(site: SiteData) -> EditionsResult:
    cfg = site.settings.editions
    if not cfg.every:
        return EditionsResult("", (), ())
    by_months = _games_by_months(site.games)
    first = min((m for m, _ in by_months), default=None)
    # No edition before the first game's month: it would list nobody.
    dates = [
        d
        for d in edition_dates(cfg.every, PgnDate.parse(cfg.since), site.as_of)
        if first is not None and (d.months or 0) > first
    ]
    found: dict[str, Edition] = {}
    keys: dict[str, str] = {}
    store = site.cache.store
    context = _context_key(site)
    for d in dates:
        as_of = day_before(d)
        games = _games_to(by_months, as_of)
        keys[iso(d)] = digest([context, iso(d), site.cache.games_digest(g.game_id for g in games)])
        hit = store.get(entry(Kind.EDITION, iso(d))) if store is not None else None
        if hit is not None and hit[0] == keys[iso(d)]:
            found[iso(d)] = hit[1]
    missing = [d for d in dates if iso(d) not in found]
    if missing:
        fresh = _compute_editions(site, missing, by_months)
        for d in missing:
            found[iso(d)] = fresh[iso(d)]
            if store is not None:
                store.set(entry(Kind.EDITION, iso(d)), (keys[iso(d)], fresh[iso(d)]))
    editions = tuple(found[iso(d)] for d in dates)
    return EditionsResult(cfg.every, editions, tuple(iso(d) for d in missing), _by_player(editions))


def _context_key(site: SiteData) -> str:
    """What every edition depends on besides its games: the code, the settings, and the
    scales the IPR and skill are rated on (the calibration, the candidates' width)."""
    res = site.state.results
    ipr = res.get("intrinsic")
    skill = res.get("bayesian")
    return digest(
        [
            site.cache.code,
            {s: site.settings.digest(s) for s in SECTIONS},
            site.spec.key if site.spec is not None else None,
            value_digest(getattr(ipr, "rating_args", ())),
            getattr(skill, "width", 0),
        ]
    )


def _games_by_months(games: Iterable[GameRecord]) -> list[tuple[float, GameRecord]]:
    """The dated games by their month (as the windows read dates), in the site's order."""
    return [(g.date.months, g) for g in games if g.date.months is not None]


def _games_to(by_months: list[tuple[float, GameRecord]], as_of: PgnDate) -> list[GameRecord]:
    end = as_of.months
    assert end is not None
    return [g for m, g in by_months if m <= end]


def _compute_editions(
    site: SiteData, dates: list[PgnDate], by_months: list[tuple[float, GameRecord]]
) -> dict[str, Edition]:
    """The editions of ``dates``, computed."""
    res = site.state.results
    cuts = [(d, day_before(d)) for d in dates]
    last_game: dict[str, float] = {}  # each player's last classical game
    for m, g in by_months:
        if g.time_class == "classical":
            for name in (g.white, g.black):
                last_game[name] = max(m, last_game.get(name, m))
    # Players rated again at each cut: those who played a classical game after it.
    active = {
        iso(d): tuple(sorted(p for p, m in last_game.items() if m > (a.months or 0)))
        for d, a in cuts
    }
    ipr_rows = _rated_again(site, cuts, active, "intrinsic")
    skill_rows = _rated_again(site, cuts, active, "bayesian")
    quality_games = getattr(res.get("quality"), "games", None)
    fill_months = site.settings.results.elo_fill_months
    # Each edition's runs are the first games of the site's own; when those are not kept,
    # each edition's resume from the last one's, the first from the build's.
    runs = results_family.resumable_runs(site)
    site_wide = results_family.site_runs(site, runs)
    material = results_family.game_materials(site, site.games)  # the results family's entry
    found = getattr(res.get("results"), "rows", None)
    site_rows = (
        results_family.ListedRows(found, site_wide) if site_wide and found is not None else None
    )
    out = {}
    for d, a in cuts:
        months = a.months
        assert months is not None
        games = _games_to(by_months, a)
        listed = results_family.listed_games(games, results_family.edition_scopes(site, months))
        elos = fill_elos(_fill_sources(games, listed, fill_months), fill_months, event_key)
        lists, runs = results_family.lists_as_of(
            site, games, months, elos, listed, runs, material, site_wide, site_rows
        )
        rows = listed_rows(
            _quality_list(site, quality_games, months),
            lists,
            _kept_and_new(res.get("intrinsic"), active[iso(d)], ipr_rows.get(months, [])),
            _kept_and_new(res.get("bayesian"), active[iso(d)], skill_rows.get(months, [])),
        )
        out[iso(d)] = Edition(
            iso(d),
            str(a),
            len(games),
            tuple((s.key, tuple(rows.get(s.key, []))) for s in LISTS),
        )
    return out


def _fill_sources(
    games: list[GameRecord], listed: list[GameRecord], months: int
) -> list[GameRecord]:
    """The games a missing Elo tag of a ``listed`` game can be filled from (see
    :func:`fill_elos`, which fills from the same time class): those of its event, and those
    within ``months`` months of it (one more for the day within the month)."""
    first: dict[str, float] = {}
    for g in listed:
        if g.date.months is None:
            return games
        first[g.time_class] = min(first.get(g.time_class, math.inf), g.date.months - months - 1)
    events = {(event_key(g), g.time_class) for g in listed}
    return [
        g
        for g in games
        if g.time_class in first
        and (
            g.date.months is None
            or g.date.months >= first[g.time_class]
            or (event_key(g), g.time_class) in events
        )
    ]


def _quality_list(site: SiteData, games: pd.DataFrame | None, months: float) -> pd.DataFrame:
    """The quality index list at ``months`` from the per-game qualities of the games up to
    then."""
    cfg = site.settings.quality
    if games is None or games.empty:
        return pd.DataFrame(columns=quality.PLAYER_COLUMNS)
    # Only the games of the window count for a listed player (an index, its status).
    at = pd.to_numeric(games["months"], errors="coerce")
    sel = games[(at <= months) & (at > months - cfg.window_months)]
    rows = quality.player_rows(sel, cfg, months)
    return quality.sort_index(quality.frame_of_parts([[r] for r in rows], quality.PLAYER_COLUMNS))


def _rated_again(
    site: SiteData,
    cuts: list[tuple[PgnDate, PgnDate]],
    active: dict[str, tuple[str, ...]],
    family: str,
) -> dict[float, list[dict[str, Any]]]:
    """as-of month → the rows of the players rated again (``active``) at that cut, from the
    partitions that hold them (the family's edition work: IPR or Bayesian skill)."""
    result = site.state.results.get(family)
    if site.partitions is None or result is None or getattr(result, "status", "") != "":
        return {}
    spec = tuple(
        (float(a.months), active[iso(d)])
        for d, a in cuts
        if active[iso(d)] and a.months is not None
    )
    if not spec:
        return {}
    if family == "intrinsic":
        if not result.rating_args:
            return {}
        work: Any = ipr_family.partition_edition_ratings
        args: tuple[Any, ...] = (site.settings.intrinsic, *result.rating_args)
        columns: tuple[str, ...] = ipr_family.TURN_READ
        beside: dict[int, str] | None = result.rating_folders
    else:
        icfg = site.settings.intrinsic
        mileposts = tuple(range(icfg.milepost_min, icfg.milepost_max + 1, icfg.milepost_step))
        work = bayes_family.partition_edition_skill
        args = (site.settings.bayesian, result.width, mileposts)
        columns = bayes_family.MOVE_COLUMNS
        beside = None
    n = site.partitions.store.partitions
    found = site.partitions.map(
        work,
        *args,
        spec,
        columns=columns,
        time_class="classical",
        only={partition_of(p, n) for _, players in spec for p in players},
        beside=beside,
    )
    out: dict[float, list[dict[str, Any]]] = {}
    for part in found:
        for m, by_player in part.items():
            out.setdefault(m, []).extend(by_player.values())
    return out


def _kept_and_new(
    result: Any, active: tuple[str, ...], new_rows: list[dict[str, Any]]
) -> pd.DataFrame | None:
    """A rating-window list (IPR or skill) at a cut: the current rows of the players with
    no game after it and the rows rated again of the others, in the family's list order."""
    players = getattr(result, "players", None)
    if players is None or players.empty:
        return None
    kept = players[~among(players["player"], set(active))]
    new = pd.DataFrame(new_rows, columns=list(players.columns))
    parts = [f for f in (kept, new) if len(f)]
    if not parts:
        return None
    frame = pd.concat(parts, ignore_index=True)
    if isinstance(result, ipr_family.IntrinsicResult):
        return ipr_family.sort_list(frame)
    return bayes_family.sort_list(frame)


def _by_player(
    editions: tuple[Edition, ...],
) -> dict[str, dict[str, tuple[tuple[str, int, float | None], ...]]]:
    out: dict[str, dict[str, list[tuple[str, int, float | None]]]] = {}
    for e in editions:
        for key, rows in e.lists:
            for rank, (player, value) in enumerate(rows, start=1):
                out.setdefault(player, {}).setdefault(key, []).append((e.date, rank, value))
    return {p: {k: tuple(v) for k, v in sorted(lists.items())} for p, lists in sorted(out.items())}
