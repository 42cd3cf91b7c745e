"""Agreement between the methods: one page ranking the players by every rating this site
computes, with Spearman correlations between the rankings and a chart per method against Elo.

Reads the results of the quality, intrinsic and Bayesian families and, when present, the
improved Elo of the results family; any of them may be missing or n/a.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from site_builder.metrics import agreement
from site_builder.metrics.agreement import Correlation
from site_builder.render import charts
from site_builder.render.tables import csv_bytes, json_bytes, records
from site_builder.render.writer import Page
from site_builder.sitedata import Family, NavItem, SiteData

#: method key → (column title, unit)
METHODS: dict[str, tuple[str, str]] = {
    "quality": ("Quality index", "q (0–100)"),
    "ipr": ("IPR", "Elo"),
    "skill": ("Bayesian skill c̄", "c̄ (no unit)"),
    "improved": ("Improved Elo", "Elo"),
    "fide": ("FIDE Elo", "Elo"),
}
COLUMNS = [
    "player",
    "quality",
    "quality_rank",
    "ipr",
    "ipr_lo",
    "ipr_hi",
    "ipr_rank",
    "skill",
    "skill_lo",
    "skill_hi",
    "skill_rank",
    "improved",
    "improved_rank",
    "fide",
    "fide_rank",
]


@dataclass
class AgreementResult:
    rows: list[dict[str, Any]]
    methods: list[str]  #: methods with at least one value
    missing: dict[str, str]  #: method → why it has no values
    correlations: list[Correlation]


def _num(v: Any) -> float | None:
    try:
        f = float(v)
    except (TypeError, ValueError):
        return None
    return None if math.isnan(f) else f


Intervals = dict[tuple[str, str], tuple[Any, Any]]


def _collect(site: SiteData) -> tuple[dict[str, dict[str, float]], Intervals, dict[str, str]]:
    values: dict[str, dict[str, float]] = {m: {} for m in METHODS}
    extra: Intervals = {}
    missing: dict[str, str] = {}
    fide_sum: dict[str, float] = {}
    q = site.results.get("quality")
    frame = getattr(q, "historical", None)
    if frame is not None and len(frame):
        for r in records(frame[frame["status"] == ""]):
            v = _num(r.get("index"))
            if v is not None:
                values["quality"][r["player"]] = v
            e = _num(r.get("mean_elo"))
            if e is not None:
                fide_sum.setdefault(r["player"], e)
    else:
        missing["quality"] = "the quality family produced no list"
    ipr = site.results.get("intrinsic")
    frame = getattr(ipr, "players", None)
    if frame is not None and len(frame):
        for r in records(frame[frame["status"] == ""]):
            v = _num(r.get("ipr"))
            if v is not None:
                values["ipr"][r["player"]] = v
                extra[("ipr", r["player"])] = (r["ipr_lo"], r["ipr_hi"])
            e = _num(r.get("mean_elo"))
            if e is not None:
                fide_sum[r["player"]] = e
    if not values["ipr"]:
        status = getattr(ipr, "status", "") or ""
        cal = getattr(ipr, "calibration", None)
        missing["ipr"] = status or getattr(cal, "status", "") or "no player has an IPR"
    sk = site.results.get("bayesian")
    frame = getattr(sk, "players", None)
    if frame is not None and len(frame):
        for r in records(frame[frame["status"] == ""]):
            v = _num(r.get("c"))
            if v is not None:
                values["skill"][r["player"]] = v
                extra[("skill", r["player"])] = (r["c_lo"], r["c_hi"])
    if not values["skill"]:
        missing["skill"] = getattr(sk, "status", "") or "no player has a Bayesian skill"
    res = site.results.get("results")
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
    values["fide"] = dict(fide_sum)
    if not values["fide"]:
        missing["fide"] = "no listed player has Elo tags in the games rated"
    return values, extra, missing


def compute(site: SiteData) -> AgreementResult:
    values, extra, missing = _collect(site)
    # Only players rated by at least one move-quality method.
    players = sorted(set(values["quality"]) | set(values["ipr"]) | set(values["skill"]))
    for m in ("improved", "fide"):
        values[m] = {p: v for p, v in values[m].items() if p in set(players)}
    rank = {m: agreement.ranks(values[m]) for m in METHODS}
    rows = []
    for p in players:
        row: dict[str, Any] = {"player": p}
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


def _charts(res: AgreementResult) -> list[tuple[str, str, dict[str, Any]]]:
    out = []
    colours = [charts.COLORS[c] for c in ("blue", "green", "purple", "red")]
    for i, m in enumerate(x for x in res.methods if x != "fide"):
        pts = [r for r in res.rows if r[m] is not None and r["fide"] is not None]
        if len(pts) < 2:
            continue
        title, unit = METHODS[m]
        trace: dict[str, Any] = {
            "type": "scatter",
            "mode": "markers",
            "name": title,
            "x": [r["fide"] for r in pts],
            "y": [r[m] for r in pts],
            "text": [r["player"] for r in pts],
            "hovertemplate": "%{text}<br>Elo %{x:.0f}<br>%{y:.3f}<extra></extra>",
            "marker": {"color": colours[i % len(colours)], "size": 8},
        }
        if m in ("ipr", "skill"):
            trace["error_y"] = {
                "type": "data",
                "symmetric": False,
                "array": [r[f"{m}_hi"] - r[m] for r in pts],
                "arrayminus": [r[m] - r[f"{m}_lo"] for r in pts],
                "color": charts.COLORS["sky"],
            }
        corr = next(
            (c for c in res.correlations if {c.a, c.b} == {m, "fide"}),
            None,
        )
        rho = (
            f", Spearman {corr.rho:.2f} (n = {corr.n})" if corr and not math.isnan(corr.rho) else ""
        )
        fig = charts.figure(
            [trace],
            charts.layout(
                f"{title} against FIDE Elo{rho}", "mean FIDE Elo in the games rated", unit
            ),
        )
        alt = (
            f"Scatter of each player's {title} against their mean FIDE Elo"
            + (" with 95% intervals as error bars" if m in ("ipr", "skill") else "")
            + (
                f"; Spearman's rank correlation {corr.rho:.2f} over {corr.n} players."
                if rho and corr
                else "."
            )
        )
        out.append((f"agreement-{m}", alt, fig))
    return out


def pages(site: SiteData) -> list[Page]:
    res: AgreementResult = site.results["agreement"]
    rows = [{**r, "href": site.player_path(r["player"])} for r in res.rows]
    corr_rows = [
        {
            "a": METHODS[c.a][0],
            "b": METHODS[c.b][0],
            "n": c.n,
            "rho": c.rho,
            "p": c.p,
        }
        for c in res.correlations
    ]
    matrix = {(c.a, c.b): c for c in res.correlations}
    matrix.update({(c.b, c.a): c for c in res.correlations})
    grid = [[matrix.get((a, b)) if a != b else None for b in res.methods] for a in res.methods]
    ctx = {
        "title": "Agreement between the methods",
        "rows": rows,
        "methods": res.methods,
        "names": METHODS,
        "missing": res.missing,
        "correlations": corr_rows,
        "grid": grid,
        "charts": _charts(res),
    }
    ccols = ["a", "b", "n", "rho", "p"]
    return [
        Page("agreement.html", "agreement.html", ctx),
        Page("data/agreement.csv", "", {"bytes": csv_bytes(res.rows, COLUMNS)}),
        Page("data/agreement.json", "", {"bytes": json_bytes(res.rows, COLUMNS)}),
        Page("data/agreement-correlations.csv", "", {"bytes": csv_bytes(corr_rows, ccols)}),
        Page("data/agreement-correlations.json", "", {"bytes": json_bytes(corr_rows, ccols)}),
    ]


FAMILY = Family(
    name="agreement",
    compute=compute,
    pages=pages,
    nav=(NavItem("Agreement", "agreement.html"),),
    methodology="partials/agreement_methodology.html",
)
