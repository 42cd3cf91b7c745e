"""Results statistics family's pages (METHODS.md §2): improved Elo, rapid and blitz ratings,
the Fighter Rating, playing style, opening statistics and the rating lists side by side, made
from the result of :func:`site_builder.families.results.compute`."""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Any

import pandas as pd

from site_builder.config import ResultsSection
from site_builder.families import results as results_family
from site_builder.families.results import TIME_CLASSES, ResultsData, latest_tags
from site_builder.frames import RecordIndex, memo_on, records, records_by
from site_builder.metrics import results
from site_builder.model import GameRecord
from site_builder.render import charts, edition_pages, paging
from site_builder.render.tables import table_files
from site_builder.render.views import Rows, columns_except
from site_builder.render.writer import Page
from site_builder.sitedata import Family, NavItem, Section, SiteData


def _by(res: ResultsData, what: str, column: str, value: str) -> list[dict[str, Any]]:
    """Records of ``rows`` or ``updates`` whose ``column`` is ``value`` (indexed once)."""
    frame: pd.DataFrame = getattr(res, what)
    return records_by(frame, column).get(value, [])


def _statuses(res: ResultsData, player: str) -> list[tuple[str, dict[str, Any], int | None]]:
    """[(scope key, row, rank or None)] of ``player`` over every list, in list order (each
    list indexed once; the rows hold :data:`_STATUS_COLUMNS`)."""

    def make() -> tuple[list[tuple[str, RecordIndex, dict[str, int]]], dict[str, list[int]]]:
        out: list[tuple[str, RecordIndex, dict[str, int]]] = []
        where: dict[str, list[int]] = {}  # player → the lists they are on, in list order
        for key, frame in res.lists.items():
            order = results.fighter_order(frame) if key == "fighter" else results.listed(frame)
            ranks = {p: i for i, p in enumerate(order["player"], start=1)}
            index = records_by(frame, "player")
            for name in index:
                where.setdefault(name, []).append(len(out))
            out.append((key, index, ranks))
        return out, where

    found: tuple[list[tuple[str, RecordIndex, dict[str, int]]], dict[str, list[int]]]
    found = memo_on(res, "statuses", make)
    lists, where = found
    return [
        (key, row, ranks.get(row["player"]))
        for key, rows, ranks in (lists[i] for i in where.get(player, []))
        for row in rows.get_columns(player, _STATUS_COLUMNS, [])
    ]


#: The columns of a list's row :func:`_status_rows` reads.
_STATUS_COLUMNS = ("player", "rating", "games", "status", "sdf")


def changed_settings(cfg: ResultsSection) -> list[dict[str, Any]]:
    """The ``[results]`` keys this build sets to another value than the method's default."""
    out = []
    for f in dataclasses.fields(cfg):
        value = getattr(cfg, f.name)
        if value != f.default:
            out.append({"key": f.name, "value": value, "default": f.default})
    return out


# --- tables -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Col:
    """A table column: row key, header, cell format and the legend line."""

    key: str
    label: str
    #: "text", "player", "int", "rating", "num1", "pct"
    kind: str
    legend: str

    @property
    def numeric(self) -> bool:
        return self.kind not in ("text", "player")


RANK = Col("rank", "Rank", "int", "position in the list")
PLAYER = Col("player", "Player", "player", "player (link to their page)")
_C = {
    "rating": Col("rating", "Rating", "rating", "the list's rating (see the heading)"),
    "games": Col("games", "Games", "int", "games counted (class, period and opponent threshold)"),
    "all_games": Col(
        "all_games", "All games", "int", "all the player's games of the class in the period"
    ),
    "score_pct": Col("score_pct", "Score %", "num1", "points per counted game, in %"),
    "performance": Col(
        "performance",
        "Perf.",
        "rating",
        "FIDE performance: mean opponent Elo + dp(score) over the games against a rated "
        "opponent; n/a when they are fewer than [results] performance_min_games",
    ),
    "performance_games": Col(
        "performance_games", "Rated", "int", "games the performance rests on (rated opponent)"
    ),
    "performance_filled": Col(
        "performance_filled",
        "Filled",
        "int",
        "of those, opponents whose missing Elo tag was filled from their other games",
    ),
    "mean_opponent_elo": Col(
        "mean_opponent_elo", "Opp. Elo", "rating", "mean Elo of the opponents (missing tags filled)"
    ),
    "draws": Col("draws", "Draws", "int", "drawn games among the counted games"),
    "short_draws": Col(
        "short_draws", "Short draws", "int", "draws whose Short Draw Factor is above 0"
    ),
    "sdf": Col(
        "sdf", "SDF", "num1", "Short Draw Factor: sum of the draws' positive factors / games"
    ),
    "sacrifice_wins": Col(
        "sacrifice_wins",
        "Sac. wins",
        "int",
        "games won after being down material for 6+ half-moves",
    ),
    "sacrifice_pct": Col("sacrifice_pct", "Sacrifice %", "num1", "sacrifice wins / games, in %"),
    "opening_draw_factor": Col(
        "opening_draw_factor",
        "Opening draw %",
        "num1",
        "mean draw % of the ECO codes of the player's games",
    ),
    "endgame_games": Col(
        "endgame_games",
        "Endgames",
        "int",
        "games of 50+ moves with material within a pawn at move 40",
    ),
    "endgame_points": Col("endgame_points", "Endgame pts", "num1", "points in those games"),
    "endgame_performance": Col(
        "endgame_performance",
        "Endgame perf.",
        "rating",
        "FIDE performance in those games; n/a below [results] performance_min_games rated",
    ),
    "endgame_rated": Col(
        "endgame_rated", "Endgame rated", "int", "endgames the endgame performance rests on"
    ),
    "endgame_filled": Col(
        "endgame_filled", "Endgame filled", "int", "of those, opponents' Elo tags filled"
    ),
    "rating_note": Col("rating_note", "Rating when", "text", "when the rating was reached"),
    "last_year": Col("last_year", "Last year", "int", "the player's last year in the period"),
}


def _cols(*keys: str, rank: bool = True) -> list[Col]:
    return ([RANK] if rank else []) + [PLAYER] + [_C[k] for k in keys]


ELO_COLS = _cols(
    "rating",
    "games",
    "all_games",
    "score_pct",
    "mean_opponent_elo",
    "performance",
    "performance_games",
    "performance_filled",
)
HISTORIC_COLS = _cols(
    "rating",
    "rating_note",
    "games",
    "all_games",
    "score_pct",
    "performance",
    "performance_games",
    "performance_filled",
)
FIGHTER_COLS = _cols("rating", "games", "draws", "short_draws", "sdf")
STYLE_COLS = _cols(
    "rating",
    "games",
    "sacrifice_wins",
    "sacrifice_pct",
    "opening_draw_factor",
    "endgame_games",
    "endgame_points",
    "endgame_performance",
    "endgame_rated",
    "endgame_filled",
)


def _rows(site: SiteData, frame: pd.DataFrame) -> list[dict[str, Any]]:
    out = []
    for rank, row in enumerate(records(frame), start=1):
        out.append({**row, "rank": rank, "href": site.player_path(row["player"])})
    return out


def _unlisted(site: SiteData, frame: pd.DataFrame) -> list[dict[str, Any]]:
    return [
        {**r, "href": site.player_path(r["player"])}
        for r in records(frame[frame["status"] != ""].sort_values("player", kind="stable"))
    ]


@dataclass
class Table:
    """One list on a page: rows, columns, downloads and the unlisted players."""

    id: str
    caption: str
    rows: list[dict[str, Any]]
    cols: list[Col]
    unlisted: list[dict[str, Any]]
    na: str
    csv: str = ""
    json: str = ""


def _table(
    site: SiteData,
    key: str,
    frame: pd.DataFrame,
    cols: list[Col],
    caption: str,
    na: str,
    downloads: list[Page],
    *,
    fighter: bool = False,
) -> Table:
    shown = results.fighter_order(frame) if fighter else results.listed(frame)
    rows = _rows(site, shown)
    table = Table(f"{key}-table", caption, rows, cols, _unlisted(site, frame), na)
    if rows:
        keys = [c.key for c in cols]
        table.csv, table.json = f"data/results-{key}.csv", f"data/results-{key}.json"
        downloads += table_files(table.csv, table.json, rows, keys)
    return table


def _na(scope: results.Scope) -> str:
    parts = [f"no player has {scope.min_games}"]
    if scope.early_until is not None:
        parts = [
            f"no player has {scope.min_games} ({scope.early_min_games} up to {scope.early_until})"
        ]
    parts.append(f" {scope.time_class} games")
    if scope.opponent_min_elo:
        parts.append(f" against opponents with an Elo tag of {scope.opponent_min_elo}+")
    parts.append(f" in {scope.period}")
    if scope.min_rating:
        parts.append(f" and a rating ({scope.rating_label}) of {scope.min_rating}+")
    return "n/a: " + "".join(parts) + "."


# --- charts -------------------------------------------------------------------------------


_DATE_AXIS = {"title": {"text": "date of the game"}, "type": "date", "automargin": True}


def _rating_trace(upd: list[dict[str, Any]], name: str, colour: str) -> dict[str, Any]:
    """A rating line through ``upd``, a player's updates in the order they were made."""
    return {
        "type": "scatter",
        "mode": "lines",
        "name": name,
        "x": [u["date"] for u in upd],
        "y": [round(u["after"], 1) for u in upd],
        "line": {"color": colour},
        "hovertemplate": f"{name}<br>%{{y:.0f}} after a game on %{{x}}<extra></extra>",
    }


def _history_chart(
    res: ResultsData, players: list[str], time_class: str, title: str
) -> dict[str, Any] | None:
    traces = []
    for i, name in enumerate(players):
        upd = [u for u in _by(res, "updates", "player", name) if u["time_class"] == time_class]
        upd.sort(key=lambda u: u["order"])
        if upd:
            traces.append(_rating_trace(upd, name, charts.PALETTE[i % len(charts.PALETTE)]))
    if not traces:
        return None
    return charts.figure(
        traces,
        charts.layout(title, "date", "rating (Elo points)", xaxis=_DATE_AXIS, showlegend=True),
    )


def _player_chart(player: str, updates: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The player's ratings after each game; ``updates`` in the order they were made."""
    colours = {"classical": "blue", "rapid": "orange", "blitz": "green"}
    traces = []
    for cls in TIME_CLASSES:
        upd = [u for u in updates if u["time_class"] == cls]
        if upd:
            trace = _rating_trace(upd, f"{cls} rating", charts.COLORS[colours[cls]])
            traces.append({**trace, "mode": "lines+markers", "marker": {"size": 4}})
    if not traces:
        return None
    return charts.figure(
        traces,
        charts.layout(
            f"{player}: rating after each game", "date", "rating (Elo points)", xaxis=_DATE_AXIS
        ),
    )


# --- pages --------------------------------------------------------------------------------


def _elo_pages(site: SiteData, res: ResultsData, downloads: list[Page]) -> list[Page]:
    cfg = site.settings.results
    pages = []
    current = None
    chart = None
    if "current" in res.lists:
        scope = res.scopes["current"]
        current = _table(
            site,
            "elo-current",
            res.lists["current"],
            ELO_COLS,
            f"Improved Elo at {site.as_of}: {scope.min_rating}+ players, games in {scope.period}",
            _na(scope),
            downloads,
        )
        top = [r["player"] for r in current.rows[: cfg.chart_players]]
        chart = _history_chart(res, top, "classical", "Improved Elo of the top players over time")
    pages.append(
        Page(
            "elo.html",
            "elo.html",
            {
                "title": "Improved Elo",
                "table": current,
                "scope": res.scopes.get("current"),
                "history_chart": chart,
                "cfg": cfg,
                "as_of": str(site.as_of),
                "unrated": res.unrated,
                "changed": changed_settings(cfg),
                "editions": edition_pages.links(site, "elo"),
            },
        )
    )
    annual = []
    all_rows: list[dict[str, Any]] = []
    for y in res.classical_years:
        key = f"year-{y}"
        t = _table(
            site,
            f"elo-{y}",
            res.lists[key],
            ELO_COLS,
            f"Improved Elo at the end of {y}",
            _na(res.scopes[key]),
            downloads,
        )
        annual.append((y, res.scopes[key], t))
        all_rows += [{**r, "year": y} for r in t.rows]
    keys = ["year", *[c.key for c in ELO_COLS]]
    if all_rows:
        downloads += table_files(
            "data/results-elo-annual.csv", "data/results-elo-annual.json", all_rows, keys
        )
    pages.append(
        Page(
            "elo-annual.html",
            "elo_annual.html",
            {
                "title": "Improved Elo: annual lists",
                "years": annual,
                "cols": ELO_COLS,
                "has_rows": bool(all_rows),
                "cfg": cfg,
            },
        )
    )
    historic = _table(
        site,
        "elo-historic",
        res.lists["historic"],
        HISTORIC_COLS,
        f"Peak year-end improved Elo, {res.scopes['historic'].period}",
        _na(res.scopes["historic"]),
        downloads,
    )
    early = _table(
        site,
        "elo-early",
        res.lists["early"],
        HISTORIC_COLS,
        f"Peak year-end improved Elo, {res.scopes['early'].period}",
        _na(res.scopes["early"]),
        downloads,
    )
    pages.append(
        Page(
            "elo-historic.html",
            "elo_historic.html",
            {
                "title": "Improved Elo: historic lists",
                "historic": historic,
                "early": early,
                "scopes": res.scopes,
                "cfg": cfg,
            },
        )
    )
    return pages


def _fast_page(site: SiteData, res: ResultsData, cls: str, downloads: list[Page]) -> Page:
    cfg = site.settings.results
    scope = res.scopes[cls]
    main = _table(
        site,
        cls,
        res.lists[cls],
        ELO_COLS,
        f"{cls.capitalize()} rating at {site.as_of}: games in {scope.period}",
        _na(scope),
        downloads,
    )
    annual = []
    if cls == "rapid":
        for y in res.rapid_years:
            key = f"rapid-{y}"
            if key in res.lists:
                t = _table(
                    site,
                    key,
                    res.lists[key],
                    ELO_COLS,
                    f"Rapid rating at the end of {y}",
                    _na(res.scopes[key]),
                    downloads,
                )
                annual.append((y, res.scopes[key], t))
    top = [r["player"] for r in main.rows[: cfg.chart_players]]
    chart = _history_chart(res, top, cls, f"{cls.capitalize()} rating of the top players over time")
    n_games = int(((res.rows["time_class"] == cls) & res.rows["white"]).sum())
    return Page(
        f"{cls}.html",
        "rapid.html",
        {
            "title": f"{cls.capitalize()} rating",
            "cls": cls,
            "table": main,
            "scope": scope,
            "annual": annual,
            "history_chart": chart,
            "k": cfg.rapid_k if cls == "rapid" else cfg.blitz_k,
            "n_games": n_games,
            "cfg": cfg,
            "unrated": res.unrated,
            "editions": edition_pages.links(site, cls),
        },
    )


def _fighter_page(site: SiteData, res: ResultsData, downloads: list[Page]) -> Page:
    tables = []
    for key in ("fighter", "historic", "early"):
        if key not in res.lists:
            continue
        scope = res.scopes[key]
        title = "Fighter list" if key == "fighter" else f"Short draws, {scope.period}"
        tables.append(
            (
                scope,
                _table(
                    site,
                    f"fighters-{key}",
                    res.lists[key],
                    FIGHTER_COLS,
                    f"{title}: {scope.min_rating}+ players, fewest short draws first",
                    _na(scope),
                    downloads,
                    fighter=True,
                ),
            )
        )
    return Page(
        "fighters.html",
        "fighters.html",
        {
            "title": "Fighter Rating",
            "tables": tables,
            "cfg": site.settings.results,
            "editions": edition_pages.links(site, "fighter"),
        },
    )


def _style_chart(rows: list[dict[str, Any]]) -> dict[str, Any] | None:
    pts = [
        r
        for r in rows
        if r["opening_draw_factor"] is not None and not math.isnan(r["opening_draw_factor"])
    ]
    if len(pts) < 2:
        return None
    return charts.figure(
        [
            {
                "type": "scatter",
                "mode": "markers+text",
                "name": "players",
                "x": [r["opening_draw_factor"] for r in pts],
                "y": [r["sacrifice_pct"] for r in pts],
                "text": [r["player"] for r in pts],
                "textposition": "top center",
                "marker": {"color": charts.COLORS["blue"], "size": 9},
                "hovertemplate": "%{text}<br>opening draw %{x:.1f}%<br>sacrifice %{y:.1f}%"
                "<extra></extra>",
            }
        ],
        charts.layout(
            "Playing style: sacrifice percentage against opening draw factor",
            "opening draw factor (% draws of the player's ECO codes)",
            "sacrifice percentage (% of games)",
        ),
    )


def _style_page(site: SiteData, res: ResultsData, downloads: list[Page]) -> Page:
    tables = []
    chart = None
    for key in ("current", "historic", "early"):
        if key not in res.lists:
            continue
        scope = res.scopes[key]
        t = _table(
            site,
            f"style-{key}",
            res.lists[key],
            STYLE_COLS,
            f"Playing style, {scope.period}: {scope.min_rating}+ players"
            if scope.min_rating
            else f"Playing style, {scope.period}",
            _na(scope),
            downloads,
        )
        tables.append((scope, t))
        fig = _style_chart(t.rows) if chart is None else None
        if fig is not None:
            chart = (fig, scope)
    return Page(
        "style.html",
        "style.html",
        {
            "title": "Playing style",
            "tables": tables,
            "style_chart": chart[0] if chart else None,
            "chart_scope": chart[1] if chart else None,
            "cfg": site.settings.results,
        },
    )


OPENING_COLS = [
    Col("eco", "ECO", "text", "ECO code A00–E99 (from the tag, else classified from the moves)"),
    Col("name", "Opening", "text", "name of the code's shortest line in the lichess table"),
    Col("games", "Games", "int", "finished games with this code"),
    Col("white_wins", "1-0", "int", "White wins"),
    Col("draws", "½-½", "int", "draws"),
    Col("black_wins", "0-1", "int", "Black wins"),
    Col("white_score", "White score %", "num1", "White's points per game, in %"),
    Col("draw_pct", "Draw %", "num1", "draws per game, in % (the opening draw factor uses this)"),
    Col("classical_games", "Classical", "int", "classical games among them"),
    Col("classical_draw_pct", "Classical draw %", "num1", "draws per classical game, in %"),
]


def _openings_page(site: SiteData, res: ResultsData, downloads: list[Page]) -> Page:
    rows = [{**r, "name": res.eco_names.get(r["eco"], "")} for r in records(res.eco)]
    keys = [c.key for c in OPENING_COLS]
    chart = None
    cfg = site.settings.results
    shown = [r for r in rows if r["games"] >= cfg.opening_chart_min_games]
    if rows:
        downloads += table_files(
            "data/results-openings.csv", "data/results-openings.json", rows, keys
        )
    if shown:
        codes = [r["eco"] for r in shown]
        chart = charts.figure(
            [
                {
                    "type": "bar",
                    "name": "draw %",
                    "x": codes,
                    "y": [r["draw_pct"] for r in shown],
                    "customdata": [[r["games"], r["name"]] for r in shown],
                    "marker": {"color": charts.COLORS["blue"]},
                    "hovertemplate": "%{x} %{customdata[1]}<br>draws %{y:.1f}% of "
                    "%{customdata[0]} games<extra></extra>",
                },
                {
                    "type": "scatter",
                    "mode": "markers",
                    "name": "White score %",
                    "x": codes,
                    "y": [r["white_score"] for r in shown],
                    "marker": {"color": charts.COLORS["orange"], "size": 6, "symbol": "diamond"},
                    "hovertemplate": "%{x}<br>White scores %{y:.1f}%<extra></extra>",
                },
            ],
            charts.layout(
                "Draw percentage and White's score per ECO code "
                f"({cfg.opening_chart_min_games}+ games)",
                "ECO code",
                "% of games (draws) / % of points (White)",
                yaxis={
                    "title": {"text": "% of games (draws) / % of points (White)"},
                    "range": [0, 100],
                    "automargin": True,
                },
                xaxis={"title": {"text": "ECO code"}, "type": "category", "automargin": True},
            ),
        )
    volumes = []
    for letter in "ABCDE":
        sel = [r for r in rows if r["eco"].startswith(letter)]
        n = sum(r["games"] for r in sel)
        draws = sum(r["draws"] for r in sel)
        score = sum(r["white_wins"] + 0.5 * r["draws"] for r in sel)
        volumes.append(
            {
                "volume": letter,
                "codes": len(sel),
                "games": n,
                "draw_pct": 100 * draws / n if n else None,
                "white_score": 100 * score / n if n else None,
            }
        )
    return Page(
        "openings.html",
        "openings.html",
        {
            "title": "Opening statistics",
            "rows": rows,
            "cols": OPENING_COLS,
            "openings_chart": chart,
            "volumes": volumes,
            "classes": cfg.opening_classes,
            "unrated": res.unrated,
            "chart_codes": len(shown),
            "chart_min": cfg.opening_chart_min_games,
        },
    )


LISTS_COLS = [
    PLAYER,
    Col("improved", "Improved Elo", "rating", "improved Elo at the as-of date (this site)"),
    Col(
        "improved_rank", "Rank", "int", "rank in the current improved Elo list (blank: not listed)"
    ),
    Col("quality", "Quality index", "num1", "play quality index of the current quality list"),
    Col("quality_rank", "Rank", "int", "rank in the current quality list (blank: not listed)"),
    Col("fide", "FIDE Elo", "rating", "the player's latest Elo tag in the content"),
    Col("fide_date", "Tag date", "text", "date of the game with that tag"),
    Col("fide_rank", "Rank", "int", "rank by FIDE Elo among the players of this table"),
]


def _lists_page(site: SiteData, res: ResultsData, downloads: list[Page]) -> Page:
    quality = site.state.results.get("quality")
    q_rows: dict[str, tuple[float, int]] = {}
    if quality is not None and len(quality.current):
        shown = quality.current[quality.current["status"] == ""]
        for rank, r in enumerate(records(shown), start=1):
            q_rows[r["player"]] = (float(r["index"]), rank)
    e_rows: dict[str, int] = {}
    active: set[str] = set()
    min_games = site.settings.results.lists_min_games
    if "current" in res.lists:
        current = res.lists["current"]
        for rank, r in enumerate(records(results.listed(current)), start=1):
            e_rows[r["player"]] = rank
        active = set(current.loc[current["all_games"] >= min_games, "player"])
    tags = latest_tags(site)
    now = res.now["classical"]
    players = sorted(set(q_rows) | set(e_rows) | active)
    rows: list[dict[str, Any]] = []
    for p in players:
        fide = tags.get(p)
        rows.append(
            {
                "player": p,
                "href": site.player_path(p),
                "improved": now.get(p),
                "improved_rank": e_rows.get(p),
                "quality": q_rows[p][0] if p in q_rows else None,
                "quality_rank": q_rows[p][1] if p in q_rows else None,
                "fide": float(fide[0]) if fide else None,
                "fide_date": fide[1] if fide else "",
            }
        )
    ranked = sorted((r for r in rows if r["fide"] is not None), key=lambda r: -r["fide"])
    for i, r in enumerate(ranked, start=1):
        r["fide_rank"] = i
    for r in rows:
        r.setdefault("fide_rank", None)
    rows.sort(key=lambda r: (-(r["improved"] or 0), r["player"]))
    keys = [c.key for c in LISTS_COLS]
    if rows:
        downloads += table_files("data/results-lists.csv", "data/results-lists.json", rows, keys)

    def col(key: str) -> list[float]:
        return [math.nan if r[key] is None else float(r[key]) for r in rows]

    pairs = [
        ("Improved Elo", "improved", "FIDE Elo", "fide"),
        ("Improved Elo", "improved", "Quality index", "quality"),
        ("FIDE Elo", "fide", "Quality index", "quality"),
    ]
    corr = []
    for la, a, lb, b in pairs:
        c = results.correlation(col(a), col(b))
        corr.append(
            {
                "a": la,
                "b": lb,
                "n": c[0] if c else None,
                "pearson": c[1] if c else None,
                "spearman": c[2] if c else None,
            }
        )
    figs: list[dict[str, Any] | None] = []
    for la, a, lb, b in pairs:
        pts = [r for r in rows if r[a] is not None and r[b] is not None]
        if len(pts) < 3:
            figs.append(None)
            continue
        c = results.correlation([r[a] for r in pts], [r[b] for r in pts])
        stats_text = f" (Pearson {c[1]:.2f}, Spearman {c[2]:.2f}, n = {c[0]})" if c else ""
        traces: list[dict[str, Any]] = [
            {
                "type": "scatter",
                "mode": "markers",
                "name": "players",
                "x": [r[a] for r in pts],
                "y": [r[b] for r in pts],
                "text": [r["player"] for r in pts],
                "marker": {"color": charts.COLORS["blue"], "size": 8},
                "hovertemplate": f"%{{text}}<br>{la} %{{x:.0f}}<br>{lb} %{{y:.1f}}<extra></extra>",
            }
        ]
        if b == "fide":
            lo = min(min(r[a] for r in pts), min(r[b] for r in pts))
            hi = max(max(r[a] for r in pts), max(r[b] for r in pts))
            traces.append(
                {
                    "type": "scatter",
                    "mode": "lines",
                    "name": "equal ratings",
                    "x": [lo, hi],
                    "y": [lo, hi],
                    "line": {"color": charts.COLORS["orange"], "dash": "dot"},
                }
            )
        unit = "index (0–100)" if b == "quality" else "Elo points"
        figs.append(
            charts.figure(
                traces,
                charts.layout(
                    f"{lb} against {la}{stats_text}", f"{la} (Elo points)", f"{lb} ({unit})"
                ),
            )
        )
    elo_fide, elo_quality, fide_quality = figs
    return Page(
        "lists.html",
        "lists.html",
        {
            "title": "Rating lists side by side",
            "rows": rows,
            "cols": LISTS_COLS,
            "corr": corr,
            "elo_fide_chart": elo_fide,
            "elo_quality_chart": elo_quality,
            "fide_quality_chart": fide_quality,
            "has_quality": quality is not None,
            "as_of": str(site.as_of),
            "min_games": min_games,
            "period": res.scopes["current"].period if "current" in res.scopes else "",
        },
    )


def facts(site: SiteData) -> dict[str, Any]:
    """For the build report: the games classified by default; for the methodology page:
    the settings used where they are not the method's."""
    res: ResultsData = site.state.results["results"]
    return {
        "time_class_default": res.default_classified,
        "results_changed": changed_settings(site.settings.results),
    }


def pages(site: SiteData) -> list[Page]:
    res: ResultsData = site.state.results["results"]
    downloads: list[Page] = []
    out = _elo_pages(site, res, downloads)
    out.append(_fast_page(site, res, "rapid", downloads))
    out.append(_fast_page(site, res, "blitz", downloads))
    out.append(_fighter_page(site, res, downloads))
    out.append(_style_page(site, res, downloads))
    out.append(_openings_page(site, res, downloads))
    out.append(_lists_page(site, res, downloads))
    tables: dict[str, Any] = {"elo.html": "table", "rapid.html": "table", "blitz.html": "table"}
    tables |= {"elo-historic.html": ("historic", "early"), "fighters.html": "tables"}
    return paging.paged_all(site, out, tables) + downloads


# --- blocks on shared pages ---------------------------------------------------------------


_LIST_NAMES = [
    ("current", "Improved Elo, current list", "elo.html"),
    ("fighter", "Fighter list", "fighters.html"),
    ("historic", "Improved Elo, historic list", "elo-historic.html"),
    ("early", "Improved Elo, historic list (early)", "elo-historic.html"),
    ("rapid", "Rapid list", "rapid.html"),
    ("blitz", "Blitz list", "blitz.html"),
]


def _status_rows(res: ResultsData, player: str) -> list[dict[str, Any]]:
    names = {k: (n, p) for k, n, p in _LIST_NAMES}
    order = {k: i for i, (k, _, _) in enumerate(_LIST_NAMES)}
    out = []
    for key, row, rank in _statuses(res, player):
        if key in names:
            name, path = names[key]
        elif key.startswith("year-"):
            name, path = f"Improved Elo, annual list {key[5:]}", "elo-annual.html"
        else:
            name, path = f"Rapid, annual list {key[6:]}", "rapid.html"
        out.append(
            {
                "list": name,
                "href": path,
                "scope": res.scopes[key],
                "rating": row["rating"],
                "games": row["games"],
                "rank": rank,
                "status": row["status"],
                "sdf": row["sdf"],
                "_order": (
                    order.get(key, len(order)),
                    key[:1],
                    -int(key[-4:]) if key[-4:].isdigit() else 0,
                ),
            }
        )
    out.sort(key=lambda r: r["_order"])
    return out


@dataclass(frozen=True)
class PlayerView:
    """What the player block reads: the player's rows (``opening_draw`` left out: it moves
    with every game of the opening anywhere in the content), their games' dates and events,
    their opponents' pages, their rating updates in the order made (the global ``order``
    left out), their place on every list, their opening draw factor as the block shows it,
    and the settings."""

    player: str
    rows: Rows
    #: game_id → (date, event)
    games: dict[str, tuple[str, str]]
    #: opponent → their page
    opponents: dict[str, str]
    #: the rows the style summary is made from (only when the block is made)
    style: Rows
    #: the classical opening draw factor as shown (to 0.1%) and its games with an opening
    opening_draw: tuple[float, int]
    updates: Rows
    statuses: list[dict[str, Any]]
    cfg: Any


def _updates_in_order(res: ResultsData) -> pd.DataFrame:
    """``updates`` sorted by the order they were made, ``order`` itself left out (once)."""

    def make() -> pd.DataFrame:
        frame = res.updates
        if "order" in frame.columns:
            frame = frame.sort_values("order", kind="stable").drop(columns=["order"])
        return frame

    found: pd.DataFrame = memo_on(res, "updates_in_order", make)
    return found


def player_view(site: SiteData, player: str) -> PlayerView | None:
    res: ResultsData = site.state.results["results"]
    rows = Rows(res.rows, "player", player, columns_except(res.rows, ("opening_draw",)))
    updates = Rows(_updates_in_order(res), "player", player)
    if not len(rows) and not len(updates):
        return None
    by_id = site.games_by_id
    games = {}
    for gid in rows.values("game_id"):
        game = by_id[gid]
        games[gid] = (str(game.date), game.event)
    return PlayerView(
        player,
        rows,
        games,
        {o: site.player_path(o) for o in sorted(set(rows.values("opponent")))},
        Rows(res.rows, "player", player, ("time_class", *_STYLE_SHOWN)),
        _opening_draw_shown(Rows(res.rows, "player", player)),
        updates,
        _status_rows(res, player),
        site.settings.results,
    )


#: The style columns the block reads row by row (the opening draw factor is read as shown).
_STYLE_SHOWN = tuple(c for c in results.STYLE_COLUMNS if c != "opening_draw")


def _opening_draw_shown(rows: Rows) -> tuple[float, int]:
    """The player's classical opening draw factor rounded as the block shows it, and its
    games: every game of an opening moves the factor of its players, and their pages' keys
    should move only when the figure they show does (``fmt(round(x, 1), 1) == fmt(x, 1)``)."""
    draws = [
        d
        for c, d in zip(rows.values("time_class"), rows.values("opening_draw"), strict=True)
        if c == "classical" and not math.isnan(d)
    ]
    factor = results.opening_draw_factor(draws)
    return round(factor, 1), len(draws)


def player_sections(view: PlayerView) -> list[Section]:
    rows = view.rows.records()
    draws = []
    sacrifices = []
    for r in rows:
        date, event = view.games[r["game_id"]]
        base = {
            "href": SiteData.game_path(r["game_id"]),
            "date": date,
            "event": event,
            "opponent": r["opponent"],
            "opponent_href": view.opponents[r["opponent"]],
            "colour": "White" if r["white"] else "Black",
            "moves": r["full_moves"],
            "plies": r["plies"],
            "time_class": r["time_class"],
        }
        if r["short_draw"]:
            draws.append(
                {
                    **base,
                    "material": r["material"],
                    "factor": r["sdf_factor"],
                    "source": r["sdf_elo_source"],
                }
            )
        if r["sacrifice"]:
            sacrifices.append({**base, "deficit_plies": r["deficit_plies"]})
    ratings = {}
    updates = view.updates.records()
    for cls in TIME_CLASSES:
        upd = [u for u in updates if u["time_class"] == cls]
        if upd:
            ratings[cls] = {
                "now": upd[-1]["after"],
                "peak": max(u["after"] for u in upd),
                "games": len(upd),
                "k": upd[-1]["k"],
                "gm": upd[-1]["gm"],
                "start": upd[0]["before"],
                "started": upd[0]["started"],
            }
    return [
        Section(
            "Results statistics",
            "partials/results_player.html",
            {
                "ratings": ratings,
                "statuses": view.statuses,
                "summary": _style_summary(view),
                "short_draws": draws,
                "sacrifices": sacrifices,
                "chart": _player_chart(view.player, updates),
                "cfg": view.cfg,
            },
        )
    ]


def _style_summary(view: PlayerView) -> dict[str, Any] | None:
    """The style summary of the player's classical games (None without any)."""
    classical = [r for r in view.style.records() if r["time_class"] == "classical"]
    if not classical:
        return None
    return results.style_summary(classical, view.cfg.performance_min_games, view.opening_draw)


#: The columns the game block reads of ``updates`` and of ``rows``.
_GAME_UPDATE_COLUMNS = ("player", "before", "expected", "k", "after")
_GAME_ROW_COLUMNS = (
    "player",
    "white",
    "draw",
    "sdf_factor",
    "deficit_plies",
    "sacrifice",
    "endgame",
)


#: The digits the game block shows of a rating update's figures (results_game.html): a
#: rating moves in its last digits with any earlier game of its players' opponents.
_GAME_UPDATE_DIGITS = (("before", 1), ("expected", 3), ("k", 2), ("after", 1))


@dataclass(frozen=True)
class GameView:
    """What the game block reads: the game's rating updates and rows (the columns shown),
    its ECO code and where it came from, the code's name, the result and the settings."""

    updates: Rows
    rows: Rows
    eco: Any
    eco_name: str
    draw: bool
    cfg: Any


def game_view(site: SiteData, game: GameRecord) -> GameView | None:
    res: ResultsData = site.state.results["results"]
    gid = game.game_id
    updates = Rows(res.updates, "game_id", gid, _GAME_UPDATE_COLUMNS, _GAME_UPDATE_DIGITS)
    rows = Rows(res.rows, "game_id", gid, _GAME_ROW_COLUMNS)
    eco = res.eco_source.get(gid)
    if not len(updates) and not len(rows) and eco is None:
        return None
    eco_name = res.eco_names.get(eco[0], "") if eco else ""
    return GameView(updates, rows, eco, eco_name, game.result == "1/2-1/2", site.settings.results)


def game_sections(view: GameView) -> list[Section]:
    upd, rows = view.updates.records(), view.rows.records()
    by_player = {u["player"]: u for u in upd}
    players = []
    for r in sorted(rows, key=lambda r: not r["white"]):
        u = by_player.get(r["player"], {})
        players.append(
            {
                "player": r["player"],
                "before": u.get("before"),
                "expected": u.get("expected"),
                "k": u.get("k"),
                "after": u.get("after"),
                "sdf_factor": r["sdf_factor"] if r["draw"] else None,
                "deficit_plies": r["deficit_plies"],
                "sacrifice": r["sacrifice"],
            }
        )
    return [
        Section(
            "Results statistics",
            "partials/results_game.html",
            {
                "eco": view.eco,
                "eco_name": view.eco_name,
                "players": players,
                "rated": bool(upd),
                "draw": view.draw,
                "endgame": any(r["endgame"] for r in rows),
                "cfg": view.cfg,
            },
        )
    ]


FAMILY = Family(
    name="results",
    compute=results_family.compute,
    pages=pages,
    facts=facts,
    nav=(
        NavItem("Improved Elo", "elo.html"),
        NavItem("Rapid & blitz", "rapid.html"),
        NavItem("Fighters", "fighters.html"),
        NavItem("Style", "style.html"),
        NavItem("Openings", "openings.html"),
        NavItem("Lists side by side", "lists.html"),
    ),
    player_view=player_view,
    player_sections=player_sections,
    # The block shows the opening draw factor: a new game changes its ECO's draw rate.
    cache_player_blocks=False,
    game_view=game_view,
    game_sections=game_sections,
    methodology="partials/results_methodology.html",
)
