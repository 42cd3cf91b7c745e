"""The play quality index family's pages: list page, player and game blocks (the numbers are
``families.quality``'s)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pandas as pd

from site_builder.families import quality
from site_builder.families.quality import QualityResult
from site_builder.frames import records
from site_builder.model import GameRecord, event_title
from site_builder.render import charts, edition_pages, paging, summary
from site_builder.render.tables import Column, download_pages
from site_builder.render.views import Rows
from site_builder.render.writer import Page
from site_builder.sitedata import Family, NavItem, Section, SiteData

#: The columns of both lists' downloads, as the legend documents them.
LIST_COLUMNS = (
    Column("rank", "Rank", "place in the list, best index first", True),
    Column("player", "Player", "name as in the games (after the alias table)"),
    Column("index", "Index q", "mean quality q (0–100) of the player's games in the window", True),
    Column("games", "Games", "analysed classical games in the window", True),
    Column(
        "match_rate",
        "Engine match",
        "share (0–1) of the counted moves equal to the engine's first choice; empty for an "
        "import that names no best move",
        True,
    ),
    Column(
        "AD",
        "AD (cp)",
        "Guid & Bratko's average difference: mean uncapped error in centipawns of the moves "
        "played in positions within the evaluation window",
        True,
    ),
    Column("moves", "Moves", "counted moves of the window's games", True),
    Column("mean_elo", "Mean Elo", "mean of the player's Elo tags in the same games", True),
    Column("window_from", "Window from", "first month of the window (year-month)"),
    Column("window_to", "Window to", "last month of the window (year-month)"),
)


def _list_rows(site: SiteData, frame: pd.DataFrame) -> list[dict[str, Any]]:
    rows = []
    for rank, row in enumerate(records(frame[frame["status"] == ""]), start=1):
        rows.append({**row, "rank": rank, "href": site.player_path(row["player"])})
    return rows


def _elo_chart(site: SiteData, res: QualityResult) -> dict[str, Any] | None:
    listed = res.historical[(res.historical["status"] == "") & res.historical["mean_elo"].notna()]
    if res.fit is None or listed.empty:
        return None
    fit = res.fit
    xs = sorted(listed["index"].tolist())
    return charts.figure(
        [
            {
                "type": "scatter",
                "mode": "markers",
                "name": "players",
                "x": listed["index"].tolist(),
                "y": listed["mean_elo"].tolist(),
                "text": listed["player"].tolist(),
                "hovertemplate": "%{text}<br>index %{x:.1f}<br>Elo %{y:.0f}<extra></extra>",
                "marker": {"color": charts.COLORS["blue"], "size": 8},
            },
            {
                "type": "scatter",
                "mode": "lines",
                "name": f"scaled QoP = {fit.intercept:.0f} + {fit.slope:.1f}·q",
                "x": [xs[0], xs[-1]],
                "y": [fit.scaled(xs[0]), fit.scaled(xs[-1])],
                "line": {"color": charts.COLORS["orange"]},
            },
        ],
        charts.layout(
            f"Quality index against Elo (Pearson {fit.pearson:.2f}, Spearman {fit.spearman:.2f}, "
            f"n = {fit.n})",
            "quality index q (0–100)",
            "mean Elo in the same games",
        ),
    )


def pages(site: SiteData) -> list[Page]:
    res: QualityResult = site.state.results["quality"]
    cfg = site.settings.quality
    current = _list_rows(site, res.current)
    historical = _list_rows(site, res.historical)
    unlisted = [
        {**r, "href": site.player_path(r["player"])}
        for r in records(res.current[res.current["status"] != ""])
    ]
    fig = _elo_chart(site, res)
    current_dl, current_files = download_pages("data/quality-current", current, LIST_COLUMNS)
    historical_dl, historical_files = download_pages(
        "data/quality-historical", historical, LIST_COLUMNS
    )
    ctx = {
        "title": "Play quality index",
        "current": current,
        "historical": historical,
        "unlisted": unlisted,
        "fit": res.fit,
        "elo_chart": fig,
        "cfg": cfg,
        "as_of": str(site.as_of),
        "current_downloads": current_dl,
        "historical_downloads": historical_dl,
        "editions": edition_pages.links(site, "quality"),
    }
    index = paging.paged_for(site, Page("index.html", "index.html", ctx), ("current", "historical"))
    return [*index, *current_files, *historical_files]


@dataclass(frozen=True)
class PlayerView:
    """What the player block reads: the player's per-game q, their rows of both lists, and
    each scored game's date and event (for the chart)."""

    player: str
    games: Rows
    historical: Rows
    current: Rows
    #: game_id → (months since year 0 or None, event, year)
    dated: dict[str, tuple[float | None, str, int | None]]


def player_view(site: SiteData, player: str) -> PlayerView:
    res: QualityResult = site.state.results["quality"]
    games = Rows(res.games, "player", player)
    by_id = site.games_by_id
    dated = {}
    for gid in games.values("game_id"):
        game = by_id[gid]
        dated[gid] = (game.date.months, game.event, game.date.year)
    return PlayerView(
        player,
        games,
        Rows(res.historical, "player", player),
        Rows(res.current, "player", player),
        dated,
    )


def player_sections(view: PlayerView) -> list[Section]:
    player = view.player
    games = [g for g in view.games.records() if g["moves"] > 0]
    row = view.historical.records()
    summary = row[0] if row else None
    cur = view.current.records()
    current = cur[0] if cur else None
    fig = None
    if games:
        xs, ys, labels = [], [], []
        for g in games:
            months, event, year = view.dated[g["game_id"]]
            if months is None:
                continue
            xs.append(round(months / 12, 3))
            ys.append(g["q"])
            labels.append(f"vs {g['opponent']} ({event_title(event, year)})")
        fig = charts.figure(
            [
                {
                    "type": "scatter",
                    "mode": "markers",
                    "name": "game quality q",
                    "x": xs,
                    "y": ys,
                    "text": labels,
                    "hovertemplate": "%{text}<br>q = %{y:.1f}<extra></extra>",
                    "marker": {"color": charts.COLORS["blue"], "size": 7},
                }
            ],
            charts.layout(
                f"{player}: quality q per game",
                "year",
                "q (0–100)",
                yaxis={"title": {"text": "q (0–100)"}, "range": [0, 100]},
            ),
        )
    return [
        Section(
            "Play quality index",
            "partials/quality_player.html",
            {
                "summary": summary,
                "current": current,
                "chart": fig,
                "n_games": len(games),
            },
        )
    ]


def game_view(site: SiteData, game: GameRecord) -> Rows:
    res: QualityResult = site.state.results["quality"]
    return Rows(res.games, "game_id", game.game_id)


def game_sections(rows: Rows) -> list[Section]:
    found = rows.records()
    if not found:
        return []
    return [Section("Quality of play in this game", "partials/quality_game.html", {"rows": found})]


FAMILY = Family(
    name="quality",
    compute=quality.compute,
    pages=pages,
    nav=(NavItem("Quality index", "index.html"),),
    player_view=player_view,
    player_sections=player_sections,
    game_view=game_view,
    game_sections=game_sections,
    methodology="partials/quality_methodology.html",
    player_summary=summary.quality_summary,
    event_performance=summary.quality_event,
)
