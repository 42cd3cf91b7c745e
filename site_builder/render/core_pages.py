"""Pages every site has: players, player, game, methodology and build report."""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Sequence
from typing import Any

from site_builder.metrics import events
from site_builder.model import GameRecord
from site_builder.render import charts
from site_builder.render.writer import Page
from site_builder.sitedata import Family, NavItem, Section, SiteData, event_key

_EVAL_CLIP = 1000  # cp shown at most on the evaluation graph


def _game_row(site: SiteData, game: GameRecord, player: str | None = None) -> dict[str, Any]:
    row: dict[str, Any] = {
        "href": site.game_path(game.game_id),
        "date": str(game.date),
        "event": game.event,
        "event_href": site.event_path(event_key(game)),
        "round": game.round,
        "white": game.white,
        "black": game.black,
        "white_href": site.player_path(game.white),
        "black_href": site.player_path(game.black),
        "result": game.result,
        "eco": game.eco or "",
        "moves": game.full_moves,
        "time_class": game.time_class,
        "analysed": game.game_id in site.analysed,
    }
    if player is not None:
        white = game.white == player
        row["colour"] = "White" if white else "Black"
        row["opponent"] = game.black if white else game.white
        row["opponent_href"] = site.player_path(row["opponent"])
        score = game.score_white
        row["score"] = None if score is None else (score if white else 1 - score)
    return row


def _games_of(site: SiteData) -> dict[str, list[GameRecord]]:
    by_player: dict[str, list[GameRecord]] = defaultdict(list)
    for g in site.games:
        by_player[g.white].append(g)
        by_player[g.black].append(g)
    for games in by_player.values():
        games.sort(key=lambda g: (g.date.sort_key, g.event, g.round, g.game_id))
    return by_player


def players_page(site: SiteData, by_player: dict[str, list[GameRecord]]) -> Page:
    rows = []
    for name in sorted(by_player):
        games = by_player[name]
        years = [g.date.year for g in games if g.date.year]
        rows.append(
            {
                "player": name,
                "href": site.player_path(name),
                "games": len(games),
                "analysed": sum(1 for g in games if g.game_id in site.analysed),
                "first": min(years) if years else None,
                "last": max(years) if years else None,
            }
        )
    return Page("players.html", "players.html", {"title": "Players", "rows": rows})


def player_page(
    site: SiteData, name: str, games: Sequence[GameRecord], families: Sequence[Family]
) -> Page:
    sections: list[Section] = []
    for fam in families:
        if fam.player_sections is not None:
            sections.extend(fam.player_sections(site, name))
    rows = [_game_row(site, g, name) for g in games]
    counts = Counter(r["time_class"] for r in rows)
    return Page(
        site.player_path(name),
        "player.html",
        {
            "title": name,
            "player": name,
            "games": rows,
            "class_counts": dict(sorted(counts.items())),
            "sections": sections,
            "breadcrumbs": [("Players", "players.html")],
        },
    )


def _move_rows(site: SiteData, game: GameRecord) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    plies = site.plies[game.game_id]
    analysed = {int(r["ply"]): r for r in site.move_rows_of(game.game_id)}
    rows = []
    xs, ys, hover = [], [], []
    for p in plies:
        row: dict[str, Any] = {
            "ply": p.ply,
            "number": f"{p.move_number}." if p.white else f"{p.move_number}…",
            "san": p.san,
            "white": p.white,
        }
        a = analysed.get(p.ply)
        if a is not None:
            best_san = a["best_san"]
            row.update(
                best=best_san,
                e_best=a["e_best"],
                e_played=a["e_played"],
                delta=a["delta"],
                is_best=a["is_best"],
            )
            sign = 1 if p.white else -1
            xs.append(p.ply / 2 + 1)
            ys.append(max(-_EVAL_CLIP, min(_EVAL_CLIP, sign * a["e_played"])) / 100)
            hover.append(f"{row['number']} {p.san} (best {best_san}, error {a['delta']} cp)")
        rows.append(row)
    fig = None
    if xs:
        fig = charts.figure(
            [
                {
                    "type": "scatter",
                    "mode": "lines+markers",
                    "name": "evaluation after the move",
                    "x": xs,
                    "y": ys,
                    "text": hover,
                    "hovertemplate": "%{text}<br>%{y:+.2f} pawns (White's view)<extra></extra>",
                    "line": {"color": charts.COLORS["blue"]},
                    "marker": {"size": 4},
                }
            ],
            charts.layout(
                "Evaluation after each analysed move",
                "move",
                "pawns, White's point of view (clipped at ±10)",
            ),
        )
    return rows, fig or {}


def game_page(site: SiteData, game: GameRecord, families: Sequence[Family]) -> Page:
    sections: list[Section] = []
    for fam in families:
        if fam.game_sections is not None:
            sections.extend(fam.game_sections(site, game))
    moves, fig = _move_rows(site, game)
    return Page(
        site.game_path(game.game_id),
        "game.html",
        {
            "title": f"{game.white} – {game.black}",
            "game": _game_row(site, game),
            "record": game,
            "tags": sorted(game.tags.items()),
            "moves": moves,
            "eval_chart": fig or None,
            "not_analysed": site.not_analysed.get(game.game_id, ""),
            "sections": sections,
            "breadcrumbs": [
                ("Tournaments", "events.html"),
                (event_key(game), site.event_path(event_key(game))),
            ],
        },
    )


_CROSSTABLE_MAX = 20  # players; larger events show standings only


def events_page(site: SiteData, by_event: dict[str, list[GameRecord]]) -> Page:
    rows = []
    for key, games in by_event.items():
        dates = sorted(g.date.sort_key for g in games)
        players = {g.white for g in games} | {g.black for g in games}
        rows.append(
            {
                "event": key,
                "href": site.event_path(key),
                "year": games[0].date.year,
                "games": len(games),
                "players": len(players),
                "analysed": sum(1 for g in games if g.game_id in site.analysed),
                "classes": ", ".join(sorted({g.time_class for g in games})),
                "sort": dates[0],
            }
        )
    rows.sort(key=lambda r: (r["sort"], r["event"]), reverse=True)
    return Page("events.html", "events.html", {"title": "Tournaments and matches", "rows": rows})


def event_page(
    site: SiteData, key: str, games: list[GameRecord], families: Sequence[Family]
) -> Page:
    table = events.standings(games)
    order = [s.player for s in table]
    rows = [
        {
            "rank": i,
            "player": s.player,
            "href": site.player_path(s.player),
            "points": s.points,
            "games": s.games,
            "elo": s.elo,
            "performance": s.performance,
        }
        for i, s in enumerate(table, start=1)
    ]
    cross = events.crosstable(games, order) if len(order) <= _CROSSTABLE_MAX else None
    sections: list[Section] = []
    for fam in families:
        if fam.event_sections is not None:
            sections.extend(fam.event_sections(site, key))
    ordered = sorted(games, key=lambda g: (g.date.sort_key, g.round, g.game_id))
    return Page(
        site.event_path(key),
        "event.html",
        {
            "title": key,
            "standings": rows,
            "crosstable": cross,
            "order": order,
            "games": [_game_row(site, g) for g in ordered],
            "sections": sections,
            "breadcrumbs": [("Tournaments", "events.html")],
        },
    )


def report_page(site: SiteData) -> list[Page]:
    by_severity: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for p in site.problems:
        by_severity[p.severity].append(
            {"source": p.source, "line": p.line, "game": p.game, "reason": p.reason}
        )
    counts = {k: len(v) for k, v in sorted(by_severity.items())}
    return [
        Page(
            "report.html",
            "report.html",
            {
                "title": "Build report",
                "groups": [
                    (k, by_severity[k])
                    for k in ("skipped", "duplicate", "warning")
                    if k in by_severity
                ],
                "counts": counts,
                "facts": site.facts,
                "not_analysed": Counter(site.not_analysed.values()).most_common(),
            },
        )
    ]


def methodology_page(site: SiteData, families: Sequence[Family]) -> Page:
    partials = [f.methodology for f in families if f.methodology]
    return Page(
        "methodology.html",
        "methodology.html",
        {
            "title": "Methodology",
            "partials": partials,
            "spec": site.spec,
            "settings": site.settings,
            "facts": site.facts,
        },
    )


def make_core_family(families: Sequence[Family]) -> Family:
    def pages(site: SiteData) -> list[Page]:
        by_player = _games_of(site)
        by_event = site.games_of_event()
        out = [
            players_page(site, by_player),
            methodology_page(site, families),
            events_page(site, by_event),
        ]
        out += [event_page(site, k, g, families) for k, g in sorted(by_event.items())]
        out += report_page(site)
        out += [player_page(site, n, g, families) for n, g in sorted(by_player.items())]
        out += [game_page(site, g, families) for g in site.games]
        return out

    return Family(
        name="core",
        compute=lambda site: None,
        pages=pages,
        nav=(
            NavItem("Players", "players.html"),
            NavItem("Tournaments", "events.html"),
            NavItem("Methodology", "methodology.html"),
            NavItem("Build report", "report.html"),
        ),
    )
