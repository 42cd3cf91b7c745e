"""The results statistics family (METHODS.md §2), from the games and the ``[results]``
settings: the sequential Elo runs (improved Elo for classical games, fixed K for rapid and
blitz), each (finished game, player)'s row (score, Short Draw Factor, sacrifice, endgame,
ECO from the tag or the moves), the opening statistics, and every list's scope and rows
(current, annual, historic, fighter, rapid, blitz). The numbers come from ``metrics.elo``,
``metrics.results`` and ``metrics.style``.
"""

from __future__ import annotations

import hashlib
import math
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import partial
from typing import Any, TypedDict

import pandas as pd

from site_builder.config import ResultsSection
from site_builder.errors import ConfigError
from site_builder.frames import among
from site_builder.ingest.eco import lichess_table
from site_builder.ingest.timecontrol import is_default
from site_builder.memo import Kind, entry
from site_builder.metrics import elo, results, style
from site_builder.metrics.elo_fill import PlayerElo
from site_builder.model import GameRecord
from site_builder.sitedata import SiteData

TIME_CLASSES = ("classical", "rapid", "blitz")


class DefaultClassified(TypedDict):
    """The games no time-control rule classified, for the build report."""

    total: int
    #: (source file, games) in file order.
    files: list[tuple[str, int]]
    #: (game label, game page path).
    games: list[tuple[str, str]]


@dataclass
class ResultsData:
    """What :func:`compute` leaves in ``site.state.results["results"]``."""

    #: Elo runs: one row per (game, player), ``time_class`` says which run.
    updates: pd.DataFrame
    year_end: dict[str, pd.DataFrame]
    #: One row per (finished game, player): see metrics.results.ROW_COLUMNS.
    rows: pd.DataFrame
    eco: pd.DataFrame
    eco_names: dict[str, str]
    #: game_id → (eco, "tag" | "moves") for games with an ECO.
    eco_source: dict[str, tuple[str, str]]
    scopes: dict[str, results.Scope]
    #: scope key → every player with a game in the scope (see evaluate_scope).
    lists: dict[str, pd.DataFrame]
    classical_years: list[int]
    rapid_years: list[int]
    #: Ratings at the as-of date, per class.
    now: dict[str, dict[str, float]]
    #: Games left out of the ratings or the ECO statistics, by reason.
    unrated: dict[str, int]
    default_classified: DefaultClassified


def _check(site: SiteData) -> None:
    cfg = site.settings.results
    if cfg.gm_min > cfg.gm_max:
        raise ConfigError(f"[results] gm_min = {cfg.gm_min} exceeds gm_max = {cfg.gm_max}")
    bad = sorted(set(cfg.opening_classes) - set(TIME_CLASSES))
    if bad:
        raise ConfigError(f"[results] opening_classes: unknown class {bad[0]!r}")


def _ecos(games: list[GameRecord]) -> dict[str, tuple[str, str]]:
    out: dict[str, tuple[str, str]] = {}
    missing = [g for g in games if g.eco is None]
    table = lichess_table() if missing else None
    for g in games:
        if g.eco is not None:
            out[g.game_id] = (g.eco, "tag")
        elif table is not None:
            found = table.classify(g.moves)
            if found is not None:
                out[g.game_id] = (found.eco, "moves")
    return out


def _k_rules(cfg: ResultsSection) -> dict[str, tuple[Callable[[int], float], int]]:
    """Each time class's K (of the games in the last gm_months) and first rated year."""
    improved_k = partial(
        elo.improved_k, numerator=cfg.k_numerator, gm_min=cfg.gm_min, gm_max=cfg.gm_max
    )
    return {
        "classical": (improved_k, 0),
        "rapid": (lambda gm: cfg.rapid_k, cfg.rapid_since),
        "blitz": (lambda gm: cfg.blitz_k, cfg.blitz_since),
    }


def _elo_run(
    cfg: ResultsSection,
    games: list[GameRecord],
    cls: str,
    previous: elo.EloRun | None = None,
) -> elo.EloRun:
    """The sequential run of ``games`` of class ``cls`` (resumed from ``previous``, a run of
    the same rules over an earlier game list)."""
    return elo.sequential_run(
        _rated_games(cfg, games, cls),
        _k_rules(cfg)[cls][0],
        cfg.start_elo,
        cfg.expected_cap,
        cfg.gm_months,
        cfg.reseed_months,
        previous=previous,
    )


def _rated_games(cfg: ResultsSection, games: list[GameRecord], cls: str) -> list[elo.RatedGame]:
    """The games a sequential run of class ``cls`` rates, in its order."""
    return elo.rated_games(games, cls, _k_rules(cfg)[cls][1])


def _all_updates(runs: dict[str, pd.DataFrame]) -> pd.DataFrame:
    if any(len(r) for r in runs.values()):
        return pd.concat(
            [r.assign(time_class=c) for c, r in runs.items() if len(r)], ignore_index=True
        )
    return runs["classical"].assign(time_class="")


def game_materials(site: SiteData, games: list[GameRecord]) -> dict[str, results.GameMaterial]:
    """Each game's material figures, reused from the last build while the game and
    ``[results]`` are unchanged. The memo is one entry over the games asked for: ask for the
    site's games (a subset would replace the entry)."""
    cfg = site.settings.results
    return site.cache.per_game(
        "results-material",
        site.settings.digest("results"),
        games,
        lambda g: results.game_material(style.material_trace(g.moves), g.full_moves, cfg),
    )


def _game_rows(
    site: SiteData,
    games: list[GameRecord],
    updates: pd.DataFrame,
    elos: dict[tuple[str, str], PlayerElo],
    rows_of: list[GameRecord] | None = None,
    material: Mapping[str, results.GameMaterial] | None = None,
) -> tuple[pd.DataFrame, dict[str, tuple[str, str]], pd.DataFrame]:
    """Each (finished game, player)'s row of the games ``rows_of`` (default: all), each
    game's ECO and its source, and the opening statistics of ``games`` (``material``: the
    games' :func:`game_materials`, if known)."""
    cfg = site.settings.results
    eco_source, eco_stats, draw_pct = _openings(site, games)
    ecos = {gid: e for gid, (e, _) in eco_source.items()}
    if rows_of is None:
        rows_of = games
    else:
        updates = updates[among(updates["game_id"], {g.game_id for g in rows_of})]
    if material is None:
        material = game_materials(site, rows_of)
    facts = {
        g.game_id: results.GameFacts(material[g.game_id], ecos.get(g.game_id)) for g in rows_of
    }
    rows = results.player_games(rows_of, facts, updates, draw_pct, cfg, elos)
    return rows, eco_source, eco_stats


def _openings(
    site: SiteData, games: list[GameRecord]
) -> tuple[dict[str, tuple[str, str]], pd.DataFrame, dict[str, float]]:
    """Each game's ECO and its source, the opening statistics of ``games`` and each
    opening's draw rate."""
    eco_source = _ecos(games)
    ecos = {gid: e for gid, (e, _) in eco_source.items()}
    eco_stats = results.eco_statistics(games, ecos, site.settings.results.opening_classes)
    draw_pct = dict(zip(eco_stats["eco"], eco_stats["draw_pct"], strict=True))
    return eco_source, eco_stats, draw_pct


class ListedRows:
    """The site's rows (:attr:`ResultsData.rows`) of the games the editions list, read once
    per build. An edition's row of a game is the site's but for three fields: the
    opponent's Elo as filled from the edition's games, and the opening's draw rate among
    them. The rest is the game's own or its Elo updates', which are the site's while the
    editions' runs are the site-wide runs' first games (:func:`site_runs`): then
    :func:`player_games` need not run again for every edition, nor their Elo updates be
    made again from the runs' rows."""

    def __init__(self, rows: pd.DataFrame, site_wide: Mapping[str, elo.EloRun]) -> None:
        self._frame = rows
        self._site_wide = site_wide
        self._updates: dict[str, pd.DataFrame] = {}
        self._at: dict[str, list[int]] = {}
        for i, gid in enumerate(rows["game_id"].tolist()):
            self._at.setdefault(gid, []).append(i)
        self._records: dict[str, list[dict[str, Any]]] = {}

    def records(
        self,
        games: list[GameRecord],
        draw_pct: Mapping[str, float],
        elos: Mapping[tuple[str, str], PlayerElo],
    ) -> list[dict[str, Any]]:
        """The :func:`results.row_records` an edition makes of ``games`` (its listed games,
        in order) with its ``elos`` and its openings' ``draw_pct``."""
        new = [g.game_id for g in games if g.game_id not in self._records]
        if new:
            at = sorted(i for gid in new for i in self._at.get(gid, ()))
            for gid in new:
                self._records[gid] = []
            for r in results.row_records(self._frame.iloc[at]):
                self._records[str(r["game_id"])].append(r)
        out = []
        for g in games:
            for site_row in self._records[g.game_id]:
                r = dict(site_row)
                r.update(results.opponent_rating(g.game_id, r["opponent"], r["opponent_elo"], elos))
                r["opening_draw"] = results.opening_draw(r["eco"], draw_pct)
                out.append(r)
        return out

    def updates(self, run: elo.EloRun, cls: str) -> pd.DataFrame:
        """``run.updates`` of ``run``, the first games of the site-wide run of ``cls``: the
        first rows of the site-wide run's frame, made once."""
        if cls not in self._updates:
            self._updates[cls] = self._site_wide[cls].updates
        return self._updates[cls].iloc[: len(run.rows)]


#: The lists an edition publishes (scope keys of :func:`compute`).
EDITION_SCOPES = ("current", "fighter", "rapid", "blitz")


def edition_scopes(site: SiteData, as_of: float) -> dict[str, results.Scope]:
    """The scopes of the lists an edition at ``as_of`` (months) publishes."""
    cfg = site.settings.results
    scopes = results.standard_scopes(cfg, as_of, [])
    scopes.update(results.fast_scopes(cfg, "rapid", as_of, []))
    scopes.update(results.fast_scopes(cfg, "blitz", as_of, []))
    return {key: scopes[key] for key in EDITION_SCOPES if key in scopes}


def listed_games(games: list[GameRecord], scopes: dict[str, results.Scope]) -> list[GameRecord]:
    """The games whose rows the ``scopes`` read (those of their class in a scope's window):
    an edition needs no row of an older game."""
    after: dict[str, float | None] = {}
    for scope in scopes.values():
        was = after.get(scope.time_class, math.inf)
        after[scope.time_class] = (
            None if scope.after is None or was is None else min(was, scope.after)
        )
    out = []
    for g in games:
        if g.time_class not in after:
            continue
        bound, months = after[g.time_class], g.date.months
        if bound is None or (months is not None and months > bound):
            out.append(g)
    return out


def resumable_runs(site: SiteData) -> dict[str, elo.EloRun]:
    """The build's sequential runs as kept for the next build (:func:`compute`), from which
    an edition's runs over an earlier game list resume: empty without a build cache."""
    store = site.cache.store
    if store is None:
        return {}
    out = {}
    for cls in TIME_CLASSES:
        found = store.get(entry(Kind.ELO_RUN, cls, _rules_key(site)))
        if found is not None:
            out[cls] = found[0]
    return out


def site_runs(site: SiteData, runs: dict[str, elo.EloRun]) -> dict[str, elo.EloRun]:
    """The kept ``runs`` (:func:`resumable_runs`), once checked to be over exactly the
    site's games: an edition's runs are then their first games' (:func:`elo.run_to`). Empty
    when one is missing or another's (a build cache shared with another site)."""
    cfg = site.settings.results
    for cls in TIME_CLASSES:
        if cls not in runs or runs[cls].games != tuple(_rated_games(cfg, site.games, cls)):
            return {}
    return runs


def lists_as_of(
    site: SiteData,
    games: list[GameRecord],
    as_of: float,
    elos: dict[tuple[str, str], PlayerElo],
    listed: list[GameRecord],
    previous: dict[str, elo.EloRun] | None = None,
    material: Mapping[str, results.GameMaterial] | None = None,
    site_wide: dict[str, elo.EloRun] | None = None,
    site_rows: ListedRows | None = None,
) -> tuple[dict[str, pd.DataFrame], dict[str, elo.EloRun]]:
    """The current, fighter, rapid and blitz lists (:data:`EDITION_SCOPES`) as they stood
    at ``as_of`` (months), made from ``games`` (the games played up to then, with ``elos``
    filled from them alone, at least for ``listed``, their :func:`listed_games`) exactly as
    :func:`compute` makes a site's: an edition's. The sequential runs resume from
    ``previous`` (runs over another game list: the result equals a run from scratch), and
    are returned for the next edition to resume from. ``material``: the site's
    :func:`game_materials`. ``site_wide``: the :func:`site_runs`, whose first games are
    ``games``' (then nothing is rated again, and the rows are ``site_rows``', if given)."""
    cfg = site.settings.results
    if site_wide:
        kept = {cls: elo.run_to(site_wide[cls], as_of) for cls in TIME_CLASSES}
    else:
        kept = {cls: _elo_run(cfg, games, cls, (previous or {}).get(cls)) for cls in TIME_CLASSES}
    scopes = edition_scopes(site, as_of)
    if site_wide and site_rows is not None:
        runs = {cls: site_rows.updates(run, cls) for cls, run in kept.items()}
        _, _, draw_pct = _openings(site, games)
        recs = site_rows.records(listed, draw_pct, elos)
    else:
        runs = {cls: run.updates for cls, run in kept.items()}
        rows, _, _ = _game_rows(site, games, _all_updates(runs), elos, listed, material)
        recs = results.row_records(rows)
    by_class = results.class_rows(recs)
    out = {}
    for key, scope in scopes.items():
        run = runs["classical"] if key in ("current", "fighter") else runs[key]
        out[key] = results.evaluate_scope(
            results.scope_rows(by_class, scope),
            scope,
            elo.rating_at(run, as_of),
            {},
            cfg.performance_min_games,
        )
    return out, kept


def _rules_key(site: SiteData) -> str:
    """What a kept sequential run depends on: the ``[results]`` settings and the code."""
    cfg = site.settings.results
    return hashlib.sha256(f"{cfg!r}|{site.cache.code}".encode()).hexdigest()[:16]


def compute(site: SiteData) -> ResultsData:
    _check(site)
    cfg = site.settings.results
    games = site.games
    as_of = site.as_of_months
    # Sequential runs resume from the last build's, from the earliest changed game on.
    rules_key = _rules_key(site)
    runs: dict[str, pd.DataFrame] = {}
    resumed: dict[str, tuple[int, int]] = {}
    for cls in TIME_CLASSES:
        slot = entry(Kind.ELO_RUN, cls, rules_key)
        found = site.cache.store.get(slot) if site.cache.store is not None else None
        run = _elo_run(cfg, games, cls, found[0] if found is not None else None)
        if site.cache.store is not None:
            site.cache.store.set(slot, (run,))
        runs[cls] = run.updates
        resumed[cls] = (run.resumed_at, len(run.games))
    site.state.facts["elo_resumed"] = resumed
    updates = _all_updates(runs)
    year_end = {c: elo.year_end_ratings(r) for c, r in runs.items()}
    now = {c: elo.rating_at(r, as_of) for c, r in runs.items()}
    rows, eco_source, eco_stats = _game_rows(site, games, updates, site.elos)
    recs = results.row_records(rows)

    def years_of(cls: str) -> list[int]:
        sel = rows[(rows["time_class"] == cls) & rows["months"].notna()]
        return sorted({int(y) for y in sel["year"].dropna()}, reverse=True)

    classical_years, rapid_years = years_of("classical"), years_of("rapid")
    scopes = results.standard_scopes(cfg, as_of, classical_years)
    scopes.update(results.fast_scopes(cfg, "rapid", as_of, rapid_years))
    scopes.update(results.fast_scopes(cfg, "blitz", as_of, []))
    lists: dict[str, pd.DataFrame] = {}
    ye = year_end["classical"]
    by_class = results.class_rows(recs)
    for key, scope in scopes.items():
        notes: dict[str, str] = {}
        if key in ("current", "fighter"):
            ratings = now["classical"]
        elif key == "historic":
            ratings, notes = results.peak_ratings(ye, cfg.historic_since, None)
        elif key == "early":
            ratings, notes = results.peak_ratings(ye, None, cfg.historic_since - 1)
        elif key.startswith("year-"):
            ratings = results.year_ratings(ye, int(key[5:]))
        elif key in ("rapid", "blitz"):
            ratings = now[key]
        else:  # rapid-YYYY
            ratings = results.year_ratings(year_end["rapid"], int(key.split("-")[1]))
        lists[key] = results.evaluate_scope(
            results.scope_rows(by_class, scope), scope, ratings, notes, cfg.performance_min_games
        )

    defaults = [g for g in games if is_default(g.time_class_reason)]
    per_file = Counter(g.source for g in defaults)
    default_classified: DefaultClassified = {
        "total": len(defaults),
        "files": sorted(per_file.items()),
        "games": [(g.label(), site.game_path(g.game_id)) for g in defaults],
    }
    unrated = {
        "undated": sum(1 for g in games if g.date.year is None and g.score_white is not None),
        "unfinished": sum(1 for g in games if g.score_white is None),
        "rapid_before": sum(
            1
            for g in games
            if g.time_class == "rapid" and g.date.year is not None and g.date.year < cfg.rapid_since
        ),
        "blitz_before": sum(
            1
            for g in games
            if g.time_class == "blitz" and g.date.year is not None and g.date.year < cfg.blitz_since
        ),
        "eco_moves": sum(1 for _, s in eco_source.values() if s == "moves"),
        "eco_none": len(games) - len(eco_source),
    }
    return ResultsData(
        updates=updates,
        year_end=year_end,
        rows=rows,
        eco=eco_stats,
        eco_names=lichess_table().names,
        eco_source=eco_source,
        scopes=scopes,
        lists=lists,
        classical_years=classical_years,
        rapid_years=rapid_years,
        now=now,
        unrated=unrated,
        default_classified=default_classified,
    )


def latest_tags(site: SiteData) -> dict[str, tuple[int, str]]:
    """player → (their latest Elo tag in the content, the date of that game)."""
    latest: dict[str, tuple[int, str]] = {}
    for g in site.games:  # sorted by date: the last tag wins
        for name, tag in ((g.white, g.white_elo), (g.black, g.black_elo)):
            if tag is not None and g.date.year is not None:
                latest[name] = (tag, str(g.date))
    return latest
