"""Agreement between the methods: every player's rating and rank by each method this site
computes, and Spearman correlations between the rankings.

Reads the results of the quality, intrinsic and Bayesian families and, when present, the
improved Elo of the results family; any of them may be missing or n/a. The FIDE Elo column has
one source for every player, whichever methods rate them: the mean Elo tag of the player's
analysed classical games in the window of the all-time quality list (``[quality]
window_months`` up to their own latest analysed classical game).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import pandas as pd

from site_builder.frames import records
from site_builder.metrics import agreement
from site_builder.metrics.agreement import Correlation
from site_builder.sitedata import SiteData

#: method key → (column title, unit)
METHODS: dict[str, tuple[str, str]] = {
    "quality": ("Quality index", "q (0–100)"),
    "ipr": ("IPR", "Elo"),
    "skill": ("Bayesian skill c̄", "c̄ (no unit)"),
    "improved": ("Improved Elo", "Elo"),
    "fide": ("FIDE Elo", "Elo"),
}

#: One rated player: ``player`` (str), each method's value (float) and ``<method>_rank``
#: (int), None when not rated, and the IPR's and the skill's interval ends (float or None).
Row = dict[str, Any]


@dataclass
class AgreementResult:
    rows: list[Row]
    methods: list[str]  #: methods with at least one value
    missing: dict[str, str]  #: method → why it has no values
    correlations: list[Correlation]


def _num(v: Any) -> float | None:
    try:
        f = float(v)
    except (TypeError, ValueError):
        return None
    return None if math.isnan(f) else f


Intervals = dict[tuple[str, str], tuple[float | None, float | None]]


#: The move-table columns :func:`partition_fide_elo` reads.
FIDE_COLUMNS = ("game_id", "player", "months", "player_elo")


def partition_fide_elo(rows: pd.DataFrame, window_months: int) -> dict[str, float]:
    """:func:`fide_elo` of one partition's movers (``rows``: their classical moves)."""
    if rows.empty:
        return {}
    games = rows.loc[:, list(FIDE_COLUMNS)].drop_duplicates(list(FIDE_COLUMNS[:2]))
    return agreement.window_mean_elo(games, window_months)


def fide_elo(site: SiteData) -> dict[str, float]:
    """Every player's FIDE Elo for the comparison, from the one source the module docstring
    names (the page's legend states it: ``fide_source``); per partition of the move store
    (a player's window needs only their own games)."""
    if site.partitions is None:
        raise RuntimeError("the agreement family reads the move store: site.partitions is None")
    window = site.settings.quality.window_months
    parts = site.partitions.map(
        partition_fide_elo, window, columns=FIDE_COLUMNS, time_class="classical"
    )
    found = {player: elo for part in parts for player, elo in part.items()}
    return {player: found[player] for player in sorted(found)}


def _collect(site: SiteData) -> tuple[dict[str, dict[str, float]], Intervals, dict[str, str]]:
    values: dict[str, dict[str, float]] = {m: {} for m in METHODS}
    extra: Intervals = {}
    missing: dict[str, str] = {}
    q = site.state.results.get("quality")
    frame = getattr(q, "historical", None)
    if frame is not None and len(frame):
        for r in records(frame[frame["status"] == ""]):
            v = _num(r.get("index"))
            if v is not None:
                values["quality"][r["player"]] = v
    else:
        missing["quality"] = "the quality family produced no list"
    ipr = site.state.results.get("intrinsic")
    frame = getattr(ipr, "players", None)
    if frame is not None and len(frame):
        for r in records(frame[frame["status"] == ""]):
            v = _num(r.get("ipr"))
            if v is not None:
                values["ipr"][r["player"]] = v
                extra[("ipr", r["player"])] = (r["ipr_lo"], r["ipr_hi"])
    if not values["ipr"]:
        status = getattr(ipr, "status", "") or ""
        cal = getattr(ipr, "calibration", None)
        missing["ipr"] = status or getattr(cal, "status", "") or "no player has an IPR"
    sk = site.state.results.get("bayesian")
    frame = getattr(sk, "players", None)
    if frame is not None and len(frame):
        for r in records(frame[frame["status"] == ""]):
            v = _num(r.get("c"))
            if v is not None:
                values["skill"][r["player"]] = v
                extra[("skill", r["player"])] = (r["c_lo"], r["c_hi"])
    if not values["skill"]:
        missing["skill"] = getattr(sk, "status", "") or "no player has a Bayesian skill"
    res = site.state.results.get("results")
    try:
        now = res.now["classical"] if res is not None else {}
        for player, rating in dict(now).items():
            v = _num(rating)
            if v is not None:
                values["improved"][str(player)] = v
    except (AttributeError, KeyError, TypeError):
        pass
    if not values["improved"]:
        missing["improved"] = "the results statistics (improved Elo) are not part of this build"
    values["fide"] = fide_elo(site)
    return values, extra, missing


def compute(site: SiteData) -> AgreementResult:
    values, extra, missing = _collect(site)
    # Only players rated by at least one move-quality method.
    players = sorted(set(values["quality"]) | set(values["ipr"]) | set(values["skill"]))
    for m in ("improved", "fide"):
        values[m] = {p: v for p, v in values[m].items() if p in set(players)}
    if not values["fide"]:
        missing["fide"] = "no rated player has an Elo tag in the games of their window"
    rank = {m: agreement.ranks(values[m]) for m in METHODS}
    rows = []
    for p in players:
        row: Row = {"player": p}
        for m in METHODS:
            row[m] = values[m].get(p)
            row[f"{m}_rank"] = rank[m].get(p)
        lo_hi = extra.get(("ipr", p), (None, None))
        row["ipr_lo"], row["ipr_hi"] = lo_hi
        lo_hi = extra.get(("skill", p), (None, None))
        row["skill_lo"], row["skill_hi"] = lo_hi
        rows.append(row)
    methods = [m for m in METHODS if values[m]]
    return AgreementResult(rows, methods, missing, agreement.correlation_matrix(methods, values))
