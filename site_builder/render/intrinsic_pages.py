"""Intrinsic performance ratings (METHODS.md section 4): calibration page, IPR list, player and
event blocks, made from the family's result (:mod:`site_builder.families.intrinsic`)."""

from __future__ import annotations

from typing import Any

import pandas as pd

from site_builder.families.intrinsic import IntrinsicResult, compute, sort_list
from site_builder.frames import RecordIndex, memo_on, records, records_by
from site_builder.metrics import intrinsic
from site_builder.metrics.intrinsic import Fit
from site_builder.render import charts, edition_pages, paging
from site_builder.render.tables import Column, download_pages, downloads_of
from site_builder.render.views import PlayerYears
from site_builder.render.writer import Page
from site_builder.sitedata import Family, NavItem, Section, SiteData

# The documented columns of the downloads (the legends beside the tables).
_IPR = (
    Column("ipr", "IPR", "intrinsic performance rating (Elo scale); empty when n/a", True),
    Column("ipr_lo", "95% low", "2.5% quantile of the bootstrap over games", True),
    Column("ipr_hi", "95% high", "97.5% quantile of the bootstrap over games", True),
)
_EDGE = Column("edge", "Grid edge", "True when the best agent lies on the edge of the Elo grid")
_TURNS = Column("turns", "Turns", "counted turns (one player's moves) rated", True)
_GAMES = Column("games", "Games", "analysed classical games those turns come from", True)
_MEAN_ELO = Column("mean_elo", "Mean Elo", "mean of the players' Elo tags in those turns", True)
_STATUS = Column("status", "Status", "empty, or why there is no IPR (n/a with the reason)")
LIST_DOWNLOAD = (
    Column("rank", "Rank", "place in the list, highest IPR first", True),
    Column("player", "Player", "name as in the games (after the alias table)"),
    *_IPR,
    _TURNS,
    _GAMES,
    _MEAN_ELO,
    Column("window_from", "Window from", "first month of the player's window (year-month)"),
    Column("window_to", "Window to", "last month of the window: the player's latest game"),
)
YEAR_DOWNLOAD = (
    Column("year", "Year", "calendar year of the games", True),
    *_IPR,
    _EDGE,
    _TURNS,
    _GAMES,
    _MEAN_ELO,
    _STATUS,
)
EVENT_DOWNLOAD = (
    Column("player", "Player", "name as in the games (after the alias table)"),
    *_IPR,
    _EDGE,
    _TURNS,
    _GAMES,
    _MEAN_ELO,
    _STATUS,
)
_SHARE = "share (0–1)"
CALIBRATION_DOWNLOAD = (
    Column(
        "milepost", "Elo", "the bucket's milepost: both players within the band around it", True
    ),
    Column("games", "Games", "rated classical games in the bucket", True),
    Column("turns", "Turns", "counted turns of those games (both sides)", True),
    Column(
        "fitted",
        "Fitted turns",
        "turns the bucket's fits read: all, or whole games drawn up to calibration_max_turns",
        True,
    ),
    Column("mean_elo", "Mean Elo", "mean Elo tag of the bucket's players", True),
    Column("s", "s", "sensitivity of the bucket's free fit", True),
    Column("c", "c", "consistency of the bucket's free fit", True),
    Column(
        "c_fit",
        "c fit",
        "c read from the line fitted to the buckets' c (weights = fitted turns)",
        True,
    ),
    Column("s_fit", "s fit", "s refitted with c = c fit", True),
    Column("mm_p", "mm projected", f"{_SHARE} of first-choice moves the model projects", True),
    Column("mm_a", "mm actual", f"{_SHARE} of turns whose engine's first move was played", True),
    Column("ad_p", "ad projected", "scaled average error the model projects (pawns)", True),
    Column("ad_a", "ad actual", "actual scaled average error (pawns)", True),
    Column("q_fit", "Q fit", "10,000 × mean squared miss of the i-th move frequencies", True),
    Column("ipr", "IPR", "IPR of the bucket's own turns under the finished calibration", True),
    Column("ipr_lo", "95% low", "2.5% quantile of the bootstrap over games", True),
    Column("ipr_hi", "95% high", "97.5% quantile of the bootstrap over games", True),
    Column("status", "Status", "empty, or why the bucket is not fitted"),
)


def _method_download(lines: int) -> tuple[Column, ...]:
    """The methods table: one row per method and bucket, M_i and f_i for every listed move."""
    moves = [
        Column(
            f"{kind}_{i}", f"{kind}{i}", f"{text} the {_ordinal(i)} listed move ({_SHARE})", True
        )
        for kind, text in (
            ("M", "projected frequency of playing"),
            ("f", "actual frequency of playing"),
        )
        for i in range(1, lines + 1)
    ]
    return (
        Column("method", "Method", "the fitting method"),
        Column("milepost", "Elo", "the bucket's milepost", True),
        Column("turns", "Turns", "turns the fit read (the bucket's, or its sample)", True),
        Column("s", "s", "sensitivity of the method's free fit", True),
        Column("c", "c", "consistency of the method's free fit", True),
        Column("mm_p", "mm projected", f"{_SHARE} of first-choice moves projected", True),
        Column("mm_a", "mm actual", f"{_SHARE} of first-choice moves played", True),
        Column("ad_p", "ad projected", "scaled average error projected (pawns)", True),
        Column("ad_a", "ad actual", "actual scaled average error (pawns)", True),
        Column("q_fit", "Q fit", "10,000 × mean squared miss of the i-th move frequencies", True),
        Column("outside", "Outside", f"{_SHARE} of turns whose move was not a listed line", True),
        *moves,
        Column("status", "Status", "empty, or why the bucket is not fitted"),
    )


def _ordinal(i: int) -> str:
    return f"{i}{'st' if i == 1 else 'nd' if i == 2 else 'rd' if i == 3 else 'th'}"


def year_downloads_base(site: SiteData, player: str) -> str:
    """Where a player's IPR-by-year table is downloaded (without .csv/.json)."""
    return f"data/players/{site.player_slugs[player]}-ipr-years"


def event_downloads_base(site: SiteData, key: str) -> str:
    """Where an event's IPR-per-player table is downloaded (without .csv/.json)."""
    return f"data/events/{site.event_slugs[key]}-ipr"


def _seed_rows() -> list[dict[str, Any]]:
    cols = ["elo", "s", "c", "c_fit", "s_fit", "mm_p", "mm_a", "ad_p", "ad_a", "q_fit"]
    return [dict(zip(cols, r, strict=True)) for r in intrinsic.SEED_TABLE_2006]


def _calibration_charts(res: IntrinsicResult) -> dict[str, Any]:
    cal = res.calibration
    if cal is None:
        return {}
    seed = _seed_rows()
    fitted = [b for b in cal.buckets if b.fit is not None]
    out: dict[str, Any] = {}
    x = [b.mean_elo for b in fitted]
    traces: list[dict[str, Any]] = [
        {
            "type": "scatter",
            "mode": "markers",
            "name": "s, free fit (this site)",
            "x": x,
            "y": [b.fit.s for b in fitted if b.fit],
            "marker": {"color": charts.COLORS["blue"], "size": 9},
        },
        {
            "type": "scatter",
            "mode": "markers",
            "name": "s refitted with c from the line (this site)",
            "x": x,
            "y": [b.refit.s if b.refit else None for b in fitted],
            "marker": {"color": charts.COLORS["orange"], "size": 9, "symbol": "diamond"},
        },
        {
            "type": "scatter",
            "mode": "lines+markers",
            "name": "s_fit, Regan & Haworth 2006–2009 (Rybka 3, depth 13)",
            "x": [r["elo"] for r in seed],
            "y": [r["s_fit"] for r in seed],
            "line": {"color": charts.COLORS["black"], "dash": "dot"},
            "marker": {"size": 5},
        },
    ]
    out["s_chart"] = charts.figure(
        traces,
        charts.layout("Sensitivity s by Elo bucket", "mean Elo of the bucket", "s (pawns)"),
    )
    c_traces: list[dict[str, Any]] = [
        {
            "type": "scatter",
            "mode": "markers",
            "name": "c, free fit (this site)",
            "x": x,
            "y": [b.fit.c for b in fitted if b.fit],
            "marker": {"color": charts.COLORS["blue"], "size": 9},
        },
        {
            "type": "scatter",
            "mode": "lines+markers",
            "name": "c, Regan & Haworth 2006–2009",
            "x": [r["elo"] for r in seed],
            "y": [r["c"] for r in seed],
            "line": {"color": charts.COLORS["black"], "dash": "dot"},
            "marker": {"size": 5},
        },
    ]
    if cal.c_line is not None and x:
        lo, hi = min(x), max(x)
        c_traces.insert(
            1,
            {
                "type": "scatter",
                "mode": "lines",
                "name": f"c line: {cal.c_line.intercept:.3f} {cal.c_line.slope:+.6f}·Elo",
                "x": [lo, hi],
                "y": [cal.c_line(lo), cal.c_line(hi)],
                "line": {"color": charts.COLORS["orange"]},
            },
        )
    out["c_chart"] = charts.figure(
        c_traces,
        charts.layout("Consistency c by Elo bucket", "mean Elo of the bucket", "c (no unit)"),
    )
    if cal.elo_line is not None:
        pts = [(b.refit.s, b.mean_elo) for b in fitted if b.refit]
        ss = [p[0] for p in pts]
        line_x = [min(ss), max(ss)] if ss else []
        rows = res.buckets.to_dict("records") if not res.buckets.empty else []
        ipr_rows = [r for r in rows if r.get("ipr") is not None and not pd.isna(r["ipr"])]
        traces = [
            {
                "type": "scatter",
                "mode": "markers",
                "name": "buckets: s refitted, mean Elo",
                "x": ss,
                "y": [p[1] for p in pts],
                "marker": {"color": charts.COLORS["blue"], "size": 9},
            },
            {
                "type": "scatter",
                "mode": "lines",
                "name": f"Elo(s) = {cal.elo_line.intercept:.0f} {cal.elo_line.slope:+.0f}·s",
                "x": line_x,
                "y": [cal.elo_line(v) for v in line_x],
                "line": {"color": charts.COLORS["orange"]},
            },
        ]
        out["elo_chart"] = charts.figure(
            traces,
            charts.layout("The line Elo(s)", "s (pawns)", "Elo"),
        )
        if ipr_rows:
            out["ipr_chart"] = charts.figure(
                [
                    {
                        "type": "scatter",
                        "mode": "markers",
                        "name": "IPR of the bucket's moves (95% interval)",
                        "x": [r["mean_elo"] for r in ipr_rows],
                        "y": [r["ipr"] for r in ipr_rows],
                        "error_y": charts.error_bars(ipr_rows, "ipr", "ipr_lo", "ipr_hi"),
                        "marker": {"color": charts.COLORS["blue"], "size": 9},
                    },
                    {
                        "type": "scatter",
                        "mode": "lines",
                        "name": "IPR = Elo",
                        "x": [ipr_rows[0]["mean_elo"], ipr_rows[-1]["mean_elo"]],
                        "y": [ipr_rows[0]["mean_elo"], ipr_rows[-1]["mean_elo"]],
                        "line": {"color": charts.COLORS["black"], "dash": "dot"},
                    },
                ],
                charts.layout(
                    "IPR of each Elo bucket against its mean Elo",
                    "mean Elo of the bucket",
                    "IPR (Elo)",
                ),
            )
    return out


def _fit_fields(fit: Fit | None) -> dict[str, Any]:
    """A free fit's numbers as the flat columns of the methods download."""
    if fit is None:
        return {}
    out: dict[str, Any] = {
        "s": fit.s,
        "c": fit.c,
        "mm_p": fit.mm_p,
        "mm_a": fit.mm_a,
        "ad_p": fit.ad_p,
        "ad_a": fit.ad_a,
        "q_fit": fit.q_fit,
        "outside": fit.outside,
    }
    for i, (m, f) in enumerate(zip(fit.projected, fit.actual, strict=True), start=1):
        out[f"M_{i}"] = m
        out[f"f_{i}"] = f
    return out


def _fit_rows(res: IntrinsicResult) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    cal = res.calibration
    if cal is None:
        return rows
    turns = {b.milepost: b for b in cal.buckets}
    for method, fits in res.method_fits.items():
        for post, fit in sorted(fits.items()):
            b = turns[post]
            rows.append(
                {
                    "method": intrinsic.METHODS[method],
                    "milepost": post,
                    "turns": b.fitted or b.turns,
                    "fit": fit,
                    "status": b.status,
                    **_fit_fields(fit),
                    "moves": [
                        {"i": i + 1, "M": m, "f": f}
                        for i, (m, f) in enumerate(zip(fit.projected, fit.actual, strict=True))
                    ]
                    if fit
                    else [],
                }
            )
    return rows


def pages(site: SiteData) -> list[Page]:
    res: IntrinsicResult = site.state.results["intrinsic"]
    cfg = site.settings.intrinsic
    listed = (
        [
            {**r, "rank": i, "href": site.player_path(r["player"])}
            for i, r in enumerate(records(res.players[res.players["status"] == ""]), start=1)
        ]
        if not res.players.empty
        else []
    )
    unlisted = (
        [
            {**r, "href": site.player_path(r["player"])}
            for r in records(res.players[res.players["status"] != ""])
        ]
        if not res.players.empty
        else []
    )
    bucket_rows = records(res.buckets) if not res.buckets.empty else []
    seed = _seed_rows()
    ctx_list = {
        "title": "Intrinsic performance ratings",
        "res": res,
        "rows": listed,
        "unlisted": unlisted,
        "cfg": cfg,
        "list_chart": _list_chart(listed),
    }
    ctx_cal = {
        "title": "Elo calibration of the intrinsic ratings",
        "res": res,
        "cal": res.calibration,
        "buckets": bucket_rows,
        "seed": seed,
        "fits": _fit_rows(res),
        "methods": intrinsic.METHODS,
        "cfg": cfg,
        "sampled": any(b.sampled for b in res.calibration.buckets) if res.calibration else False,
        **_calibration_charts(res),
    }
    fits = ctx_cal["fits"]
    width = max((len(r["moves"]) for r in fits), default=0)
    list_dl, list_files = download_pages("data/intrinsic", listed, LIST_DOWNLOAD)
    cal_dl, cal_files = download_pages("data/calibration", bucket_rows, CALIBRATION_DOWNLOAD)
    methods_dl, methods_files = download_pages(
        "data/calibration-methods", fits, _method_download(max(width, 1))
    )
    ctx_list["downloads"] = list_dl
    ctx_list["editions"] = edition_pages.links(site, "ipr")
    ctx_cal["downloads"] = cal_dl
    ctx_cal["methods_downloads"] = methods_dl
    out = [
        *paging.paged_for(site, Page("intrinsic.html", "intrinsic.html", ctx_list)),
        Page("calibration.html", "calibration.html", ctx_cal),
        *list_files,
        *cal_files,
        *methods_files,
    ]
    return out


def player_files(view: PlayerYears) -> list[Page]:
    """The player's IPR-by-year table as a download."""
    rows = view.years.records() if view.years is not None else []
    return download_pages(view.downloads_base, rows, YEAR_DOWNLOAD)[1] if rows else []


def event_files(site: SiteData, key: str) -> list[Page]:
    """The event's IPR-per-player table as a download."""
    res: IntrinsicResult = site.state.results["intrinsic"]
    rows = [] if res.status or res.event_players.empty else _event_lists(res).get(key)
    return download_pages(event_downloads_base(site, key), rows, EVENT_DOWNLOAD)[1] if rows else []


def _event_lists(res: IntrinsicResult) -> RecordIndex:
    """event → its players' rows in list order (sorted once)."""
    ordered = memo_on(res.event_players, "sorted", lambda: sort_list(res.event_players))
    return records_by(ordered, "event")


def _list_chart(rows: list[dict[str, Any]]) -> dict[str, Any] | None:
    rated = [r for r in rows if r["mean_elo"] is not None and not pd.isna(r["mean_elo"])]
    if len(rated) < 2:
        return None
    return charts.figure(
        [
            {
                "type": "scatter",
                "mode": "markers",
                "name": "players (95% interval)",
                "x": [r["mean_elo"] for r in rated],
                "y": [r["ipr"] for r in rated],
                "text": [r["player"] for r in rated],
                "error_y": charts.error_bars(
                    rated, "ipr", "ipr_lo", "ipr_hi", charts.COLORS["sky"]
                ),
                "hovertemplate": "%{text}<br>Elo %{x:.0f}<br>IPR %{y:.0f}<extra></extra>",
                "marker": {"color": charts.COLORS["blue"], "size": 8},
            },
            {
                "type": "scatter",
                "mode": "lines",
                "name": "IPR = Elo",
                "x": [min(r["mean_elo"] for r in rated), max(r["mean_elo"] for r in rated)],
                "y": [min(r["mean_elo"] for r in rated), max(r["mean_elo"] for r in rated)],
                "line": {"color": charts.COLORS["black"], "dash": "dot"},
            },
        ],
        charts.layout(
            "IPR against FIDE Elo (each player's last two years)",
            "mean Elo in the same games",
            "IPR (Elo)",
        ),
    )


def player_sections(view: PlayerYears) -> list[Section]:
    player = view.player
    if view.status or view.summary is None or view.years is None:
        return [
            Section(
                "Intrinsic performance rating",
                "partials/intrinsic_player.html",
                {
                    "status": view.status,
                    "summary": None,
                    "years": [],
                    "chart": None,
                    "downloads": None,
                },
            )
        ]
    rows, years = view.summary.records(), view.years.records()
    rated = [y for y in years if not y["status"]]
    fig = None
    if rated:
        fig = charts.figure(
            [
                charts.interval_trace(
                    rated,
                    "year",
                    "ipr",
                    "ipr_lo",
                    "ipr_hi",
                    "IPR (95% interval)",
                    charts.COLORS["blue"],
                ),
                {
                    "type": "scatter",
                    "mode": "markers",
                    "name": "mean FIDE Elo in the same games",
                    "x": [y["year"] for y in rated],
                    "y": [y["mean_elo"] for y in rated],
                    "marker": {"color": charts.COLORS["orange"], "symbol": "diamond", "size": 9},
                },
            ],
            charts.layout(f"{player}: IPR by year", "year", "Elo"),
        )
    return [
        Section(
            "Intrinsic performance rating",
            "partials/intrinsic_player.html",
            {
                "status": "",
                "summary": rows[0] if rows else None,
                "years": years,
                "chart": fig,
                "downloads": downloads_of(view.downloads_base, YEAR_DOWNLOAD),
            },
        )
    ]


def player_view(site: SiteData, player: str) -> PlayerYears | None:
    res: IntrinsicResult = site.state.results["intrinsic"]
    return PlayerYears.of(
        player, res.status, res.players, res.years, year_downloads_base(site, player)
    )


def event_sections(site: SiteData, key: str) -> list[Section]:
    res: IntrinsicResult = site.state.results["intrinsic"]
    if res.status or res.events.empty:
        return []
    ev = records_by(res.events, "event").get(key, [])
    if not ev:
        return []
    listed = _event_lists(res).get(key, [])
    rows = [{**r, "href": site.player_path(r["player"])} for r in listed]
    return [
        Section(
            "Intrinsic performance ratings",
            "partials/intrinsic_event.html",
            {
                "event": ev[0],
                "players": rows,
                "cfg": site.settings.intrinsic,
                "downloads": downloads_of(event_downloads_base(site, key), EVENT_DOWNLOAD),
            },
        )
    ]


def calibration_text(res: IntrinsicResult, settings: Any) -> list[str]:
    """The calibration table as plain text (``site-builder calibrate``)."""
    cfg = settings.intrinsic
    if res.status:
        return [res.status]
    cal = res.calibration
    if cal is None:
        return ["n/a: no calibration"]
    lines = [
        f"Elo calibration, {intrinsic.METHODS[cal.method]} fit, both players within "
        f"±{cfg.milepost_width} of a milepost:",
        f"{'Elo':>5} {'games':>6} {'turns':>6} {'mean':>6} {'s':>6} {'c':>6} {'cfit':>6} "
        f"{'sfit':>6} {'mm p/a %':>11} {'ad p/a':>13} {'Qfit':>6}  IPR [95%]",
    ]
    for r in records(res.buckets) if not res.buckets.empty else []:
        head = f"{r['milepost']:>5} {r['games']:>6} {r['turns']:>6} "
        if r["status"]:
            lines.append(head + f"{'':>6} {r['status']}")
            continue
        ipr = (
            f"  {r['ipr']:.0f} [{r['ipr_lo']:.0f}, {r['ipr_hi']:.0f}]"
            if r.get("ipr") is not None
            else "  n/a"
        )
        c_fit = f"{r['c_fit']:6.3f}" if r.get("c_fit") is not None else f"{'n/a':>6}"
        s_fit = f"{r['s_fit']:6.3f}" if r.get("s_fit") is not None else f"{'n/a':>6}"
        lines.append(
            head
            + f"{r['mean_elo']:6.0f} {r['s']:6.3f} {r['c']:6.3f} {c_fit} {s_fit} "
            + f"{100 * r['mm_p']:5.1f}/{100 * r['mm_a']:5.1f} "
            + f"{r['ad_p']:6.3f}/{r['ad_a']:6.3f} {r['q_fit']:6.3f}{ipr}"
        )
    if cal.c_line is not None:
        lines.append(f"c(Elo) = {cal.c_line.intercept:.4f} {cal.c_line.slope:+.6f}·Elo")
    if cal.elo_line is not None:
        lines.append(f"Elo(s) = {cal.elo_line.intercept:.0f} {cal.elo_line.slope:+.1f}·s")
    sampled = [b for b in cal.buckets if b.sampled]
    if sampled:
        lines.append(
            "Fitted on a sample of whole games: "
            + ", ".join(f"{b.milepost} ({b.fitted} of {b.turns} turns)" for b in sampled)
        )
    if cal.status:
        lines.append(cal.status)
    return lines


FAMILY = Family(
    name="intrinsic",
    compute=compute,
    pages=pages,
    nav=(NavItem("IPR", "intrinsic.html"), NavItem("Calibration", "calibration.html")),
    player_view=player_view,
    player_sections=player_sections,
    event_sections=event_sections,
    player_files=player_files,
    event_files=event_files,
    methodology="partials/intrinsic_methodology.html",
)
