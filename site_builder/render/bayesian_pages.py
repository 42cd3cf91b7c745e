"""Bayesian skill (METHODS.md section 5): skill list, Elo groups and outcome tables, player and
game blocks."""

from __future__ import annotations

import math
from typing import Any

from site_builder.families.bayesian import BayesianResult, compute
from site_builder.frames import records
from site_builder.metrics import bayesian
from site_builder.model import GameRecord
from site_builder.render import charts, edition_pages, paging
from site_builder.render.tables import Column, download_pages, downloads_of
from site_builder.render.views import PlayerYears, Rows
from site_builder.render.writer import Page
from site_builder.sitedata import Family, NavItem, Section, SiteData

# The documented columns of the downloads (the legends beside the tables).
_C = Column("c", "c̄", "apparent skill: the posterior mean of c (higher is better)", True)
_SD = Column("sd", "σ", "standard deviation of the posterior of c", True)
_C_LO = Column("c_lo", "95% region low", "2.5% quantile of the posterior of c", True)
_C_HI = Column("c_hi", "95% region high", "97.5% quantile of the posterior of c", True)
_SKILL_ELO = (
    Column("skill_elo", "Skill Elo", "c̄ read on the Elo line of this site's Elo groups", True),
    Column("skill_elo_lo", "Skill Elo low", "the line's Elo at the 95% region's low end", True),
    Column("skill_elo_hi", "Skill Elo high", "the line's Elo at the 95% region's high end", True),
)
_TURNS = Column("turns", "Turns", "counted turns (one player's moves) in the posterior", True)
_GAMES = Column("games", "Games", "analysed classical games those turns come from", True)
_MEAN_ELO = Column("mean_elo", "Mean Elo", "mean of the player's Elo tags in those games", True)
LIST_DOWNLOAD = (
    Column("rank", "Rank", "place in the list, highest c̄ first", True),
    Column("player", "Player", "name as in the games (after the alias table)"),
    _C,
    _SD,
    _C_LO,
    _C_HI,
    *_SKILL_ELO,
    _TURNS,
    _GAMES,
    _MEAN_ELO,
    Column("window_from", "Window from", "first month of the player's window (year-month)"),
    Column("window_to", "Window to", "last month of the window: the player's latest game"),
)
YEAR_DOWNLOAD = (
    Column("year", "Year", "calendar year of the games", True),
    _C,
    _SD,
    _C_LO,
    _C_HI,
    Column("edge", "Cut by the grid", "True when the posterior is cut by the end of the c grid"),
    *_SKILL_ELO,
    _TURNS,
    _GAMES,
    _MEAN_ELO,
    Column("status", "Status", "empty, or why the year has no skill (n/a with the turn count)"),
)
GROUP_DOWNLOAD = (
    Column("milepost", "Group", "the Elo milepost: both players within the band around it", True),
    Column("games", "Games", "games whose two players are both in the band", True),
    Column("turns", "Turns", "counted turns of those games (both sides)", True),
    Column("mean_elo", "Mean Elo", "mean Elo tag of the group's players", True),
    _C,
    _SD,
    Column("c_lo", "CR min", "2.5% quantile of the posterior of c (the credible region)", True),
    Column("c_hi", "CR max", "97.5% quantile of the posterior of c", True),
    Column("status", "Note", "empty, or why the group is not used by the Elo mapping"),
    Column("outside", "Outside top mv", "turns whose played move is outside the top lines", True),
    Column(
        "c_top", "c̄ without them", "c̄ of the group's other turns (played move in the top)", True
    ),
    Column("shift", "Shift", "c̄ without those turns minus c̄ with them", True),
)
TOP_SHIFT_DOWNLOAD = (
    Column("milepost", "Group", "the Elo milepost of the group", True),
    Column("turns", "Turns", "counted turns of the group", True),
    Column("outside", "Outside top mv", "turns whose played move is outside the top lines", True),
    Column("c", "c̄", "c̄ of all the group's turns (the published figure)", True),
    Column("c_top", "c̄ without them", "c̄ of the group's other turns", True),
    Column("shift", "Shift", "c̄ without those turns minus c̄ with them", True),
)
OUTCOME_DOWNLOAD = (
    Column("scope", "Group", "the Elo group and the band it was built with (±Elo)"),
    Column("milepost", "Milepost", "the group's Elo milepost", True),
    Column("set", "Set", "the game sides counted: winners, losers or drawers"),
    Column("sides", "Sides", "game sides (one player in one game) in the cell", True),
    Column("short", "Left out", "sides of the set with fewer turns than the minimum", True),
    Column("mean", "mean c̄", "mean of the sides' apparent skill c̄", True),
    Column("sd", "σ of c̄", "standard deviation of the sides' c̄", True),
)


def year_downloads_base(site: SiteData, player: str) -> str:
    """Where a player's skill-by-year table is downloaded (without .csv/.json)."""
    return f"data/players/{site.player_slugs[player]}-skill-years"


def top_shift_rows(res: BayesianResult) -> list[dict[str, Any]]:
    """Per Elo group with turns: c̄ with and without the turns whose played move is outside
    the top ``mv`` lines (for the methodology page)."""
    if res.status or res.groups.empty:
        return []
    used = res.groups[res.groups["turns"] > 0]
    cols = ["milepost", "turns", "outside", "c", "c_top", "shift"]
    return records(used[cols])


def _curve_chart(res: BayesianResult) -> dict[str, Any] | None:
    if not res.curves:
        return None
    traces = []
    for i, (m, (grid, dens)) in enumerate(sorted(res.curves.items())):
        traces.append(
            {
                "type": "scatter",
                "mode": "lines",
                "name": f"E{m}",
                "x": grid,
                "y": dens,
                "line": {"color": charts.PALETTE[i % len(charts.PALETTE)]},
            }
        )
    return charts.figure(
        traces,
        charts.layout(
            "Posterior of c for the Elo groups", "c (apparent skill, no unit)", "density"
        ),
    )


def _group_chart(res: BayesianResult) -> dict[str, Any] | None:
    g = res.groups[res.groups["c"].notna()] if not res.groups.empty else res.groups
    if g.empty:
        return None
    traces: list[dict[str, Any]] = [
        {
            "type": "scatter",
            "mode": "markers",
            "name": "this site: c̄ (95% credible region)",
            "x": g["mean_elo"].tolist(),
            "y": g["c"].tolist(),
            "error_y": charts.error_bars(g.to_dict("records"), "c", "c_lo", "c_hi"),
            "marker": {"color": charts.COLORS["blue"], "size": 9},
        },
        {
            "type": "scatter",
            "mode": "lines+markers",
            "name": "Di Fatta et al. Table II (Toga II, depth 10)",
            "x": [r[0] for r in bayesian.SEED_TABLE_II],
            "y": [r[1] for r in bayesian.SEED_TABLE_II],
            "line": {"color": charts.COLORS["black"], "dash": "dot"},
        },
    ]
    if res.elo_line is not None:
        cs = [float(g["c"].min()), float(g["c"].max())]
        traces.append(
            {
                "type": "scatter",
                "mode": "lines",
                "name": "mapping line",
                "x": [res.elo_line(c) for c in cs],
                "y": cs,
                "line": {"color": charts.COLORS["orange"]},
            }
        )
    return charts.figure(
        traces, charts.layout("Apparent skill c̄ by Elo group", "mean Elo of the group", "c̄")
    )


def facts(site: SiteData) -> dict[str, Any]:
    """For the methodology page: the shift of c̄ without the turns outside the top lines."""
    res: BayesianResult = site.state.results["bayesian"]
    shift_rows = top_shift_rows(res)
    shift_dl = download_pages("data/skill-top-shift", shift_rows, TOP_SHIFT_DOWNLOAD)[0]
    finite = [
        r["shift"] for r in shift_rows if r["shift"] is not None and math.isfinite(r["shift"])
    ]
    top_shift = {
        "rows": shift_rows,
        "downloads": shift_dl,
        "range": (min(finite), max(finite)) if finite else None,
    }
    return {"bayesian_top_shift": top_shift}


def pages(site: SiteData) -> list[Page]:
    res: BayesianResult = site.state.results["bayesian"]
    cfg = site.settings.bayesian
    listed: list[dict[str, Any]] = []
    unlisted: list[dict[str, Any]] = []
    if not res.players.empty:
        for i, r in enumerate(records(res.players[res.players["status"] == ""]), start=1):
            listed.append({**r, "rank": i, "href": site.player_path(r["player"])})
        unlisted = [
            {**r, "href": site.player_path(r["player"])}
            for r in records(res.players[res.players["status"] != ""])
        ]
    groups = records(res.groups) if not res.groups.empty else []
    seed2 = [
        dict(zip(["elo", "c", "sd", "lo", "hi", "games", "events"], r, strict=True))
        for r in bayesian.SEED_TABLE_II
    ]
    seed3 = [dict(zip(["set", "n", "mean", "sd"], r, strict=True)) for r in bayesian.SEED_TABLE_III]
    shift_files = download_pages("data/skill-top-shift", top_shift_rows(res), TOP_SHIFT_DOWNLOAD)[1]
    ctx = {
        "title": "Bayesian skill",
        "res": res,
        "rows": listed,
        "unlisted": unlisted,
        "cfg": cfg,
        "list_chart": _list_chart(listed),
    }
    ctx_groups = {
        "title": "Bayesian skill by Elo group and by result",
        "res": res,
        "groups": groups,
        "seed2": seed2,
        "seed3": seed3,
        "outcomes": res.outcomes,
        "cfg": cfg,
        "width": cfg.group_width,
        "curve_chart": _curve_chart(res),
        "group_chart": _group_chart(res),
    }
    skill_dl, skill_files = download_pages("data/skill", listed, LIST_DOWNLOAD)
    groups_dl, groups_files = download_pages("data/skill-groups", groups, GROUP_DOWNLOAD)
    outcomes_dl, outcomes_files = download_pages(
        "data/skill-outcomes", res.outcomes, OUTCOME_DOWNLOAD
    )
    ctx["downloads"] = skill_dl
    ctx["editions"] = edition_pages.links(site, "skill")
    ctx_groups["groups_downloads"] = groups_dl
    ctx_groups["outcomes_downloads"] = outcomes_dl
    out = [
        *paging.paged_for(site, Page("skill.html", "skill.html", ctx)),
        Page("skill-groups.html", "skill_groups.html", ctx_groups),
        *skill_files,
        *groups_files,
        *outcomes_files,
        *shift_files,
    ]
    return out


def player_files(view: PlayerYears) -> list[Page]:
    """The player's skill-by-year table (on the player page) as a download."""
    rows = view.years.records() if view.years is not None else []
    return download_pages(view.downloads_base, rows, YEAR_DOWNLOAD)[1] if rows else []


def _list_chart(rows: list[dict[str, Any]]) -> dict[str, Any] | None:
    rated = [r for r in rows if r["mean_elo"] is not None and not math.isnan(r["mean_elo"])]
    if len(rated) < 2:
        return None
    return charts.figure(
        [
            {
                "type": "scatter",
                "mode": "markers",
                "name": "players (95% credible region)",
                "x": [r["mean_elo"] for r in rated],
                "y": [r["c"] for r in rated],
                "text": [r["player"] for r in rated],
                "error_y": charts.error_bars(rated, "c", "c_lo", "c_hi", charts.COLORS["sky"]),
                "hovertemplate": "%{text}<br>Elo %{x:.0f}<br>c̄ %{y:.3f}<extra></extra>",
                "marker": {"color": charts.COLORS["blue"], "size": 8},
            }
        ],
        charts.layout(
            "Apparent skill c̄ against FIDE Elo (each player's last two years)",
            "mean Elo in the same games",
            "c̄ (no unit)",
        ),
    )


def player_sections(view: PlayerYears) -> list[Section]:
    player = view.player
    if view.status or view.summary is None or view.years is None:
        return [
            Section(
                "Bayesian skill",
                "partials/bayesian_player.html",
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
                    "c",
                    "c_lo",
                    "c_hi",
                    "c̄ (95% credible region)",
                    charts.COLORS["green"],
                )
            ],
            charts.layout(f"{player}: apparent skill c̄ by year", "year", "c̄ (no unit)"),
        )
    return [
        Section(
            "Bayesian skill",
            "partials/bayesian_player.html",
            {
                "status": "",
                "summary": rows[0] if rows else None,
                "years": years,
                "chart": fig,
                "mapping": view.note,
                "downloads": downloads_of(view.downloads_base, YEAR_DOWNLOAD),
            },
        )
    ]


def player_view(site: SiteData, player: str) -> PlayerYears | None:
    res: BayesianResult = site.state.results["bayesian"]
    return PlayerYears.of(
        player,
        res.status,
        res.players,
        res.years,
        year_downloads_base(site, player),
        res.mapping_status,
    )


def game_view(site: SiteData, game: GameRecord) -> Rows | None:
    res: BayesianResult = site.state.results["bayesian"]
    if res.status or len(res.sides) == 0:
        return None
    return Rows(res.sides, "game_id", game.game_id)


def game_sections(sides: Rows) -> list[Section]:
    rows = sides.records()
    if not rows:
        return []
    return [Section("Bayesian skill in this game", "partials/bayesian_game.html", {"rows": rows})]


FAMILY = Family(
    name="bayesian",
    compute=compute,
    pages=pages,
    facts=facts,
    nav=(NavItem("Skill", "skill.html"),),
    player_view=player_view,
    player_sections=player_sections,
    player_files=player_files,
    game_view=game_view,
    game_sections=game_sections,
    methodology="partials/bayesian_methodology.html",
)
