"""Agreement between the methods: one page ranking the players by every rating this site
computes, with Spearman correlations between the rankings and a chart per method against Elo
(the numbers are ``families.agreement``'s).
"""

from __future__ import annotations

import math
from typing import Any

from site_builder.families import agreement
from site_builder.families.agreement import METHODS, AgreementResult
from site_builder.render import charts, paging
from site_builder.render.tables import Column, Downloads, download_pages
from site_builder.render.writer import Page
from site_builder.sitedata import Family, NavItem, SiteData


def fide_source(window_months: int) -> str:
    """What the FIDE Elo column is, for the legend and the methodology."""
    return (
        "mean of the player's Elo tags in their analysed classical games of the "
        f"{window_months} months up to their own latest analysed classical game (the window "
        "of the all-time quality list); the same source for every player"
    )


def download_columns(window_months: int) -> tuple[Column, ...]:
    """The documented columns of ``data/agreement.csv`` and ``.json``."""
    rank = "rank by {}: 1 = highest; ties share the better rank; empty when not rated"
    return (
        Column("player", "Player", "name as in the games (after the alias table)"),
        Column(
            "quality",
            "Quality q",
            "all-time play quality index (0–100): the quality list's value over the player's "
            f"{window_months} months up to their latest game",
            True,
        ),
        Column("quality_rank", "rank", rank.format("quality index"), True),
        Column("ipr", "IPR", "intrinsic performance rating (Elo) of the IPR list", True),
        Column("ipr_lo", "IPR low", "2.5% end of the IPR's bootstrap 95% interval", True),
        Column("ipr_hi", "IPR high", "97.5% end of the IPR's bootstrap 95% interval", True),
        Column("ipr_rank", "rank", rank.format("IPR"), True),
        Column("skill", "c̄", "Bayesian skill: posterior mean of c on the skill list", True),
        Column("skill_lo", "c̄ low", "2.5% end of the 95% credible region of c", True),
        Column("skill_hi", "c̄ high", "97.5% end of the 95% credible region of c", True),
        Column("skill_rank", "rank", rank.format("c̄"), True),
        Column(
            "improved",
            "Improved Elo",
            "the results statistics' improved Elo (classical) at the as-of date",
            True,
        ),
        Column("improved_rank", "rank", rank.format("improved Elo"), True),
        Column("fide", "FIDE Elo", fide_source(window_months), True),
        Column("fide_rank", "rank", rank.format("FIDE Elo"), True),
    )


CORRELATION_COLUMNS = (
    Column("a", "Method", "the first method of the pair"),
    Column("b", "Method", "the second method of the pair"),
    Column("n", "Players", "players rated by both methods", True),
    Column(
        "rho",
        "ρ",
        "Spearman's rank correlation between the two methods over those players (empty below "
        "three players or when one method gives them all the same value)",
        True,
    ),
    Column("p", "p", "two-sided p-value of ρ = 0", True),
)


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
            trace["error_y"] = charts.error_bars(pts, m, f"{m}_lo", f"{m}_hi", charts.COLORS["sky"])
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
                f"{title} against FIDE Elo{rho}", "FIDE Elo (mean Elo tag in the window)", unit
            ),
        )
        alt = (
            f"Scatter of each player's {title} against their FIDE Elo (mean Elo tag)"
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
    res: AgreementResult = site.state.results["agreement"]
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
    window = site.settings.quality.window_months
    players_dl, player_files = download_pages("data/agreement", res.rows, download_columns(window))
    corr_dl, corr_files = download_pages(
        "data/agreement-correlations", corr_rows, CORRELATION_COLUMNS
    )
    downloads: dict[str, Downloads] = {"players": players_dl, "correlations": corr_dl}
    ctx["downloads"] = downloads
    listed = paging.paged_for(site, Page("agreement.html", "agreement.html", ctx))
    return [*listed, *player_files, *corr_files]


FAMILY = Family(
    name="agreement",
    compute=agreement.compute,
    pages=pages,
    nav=(NavItem("Agreement", "agreement.html"),),
    methodology="partials/agreement_methodology.html",
)
