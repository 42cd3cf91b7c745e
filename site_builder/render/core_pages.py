"""Pages every site has: players, player, game, events, event, methodology and build report,
and the player-search index every page's search box reads."""

from __future__ import annotations

import functools
from collections import Counter, defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from markupsafe import Markup

from site_builder.memo import Kind
from site_builder.memo import entry as memo_entry
from site_builder.metrics import events
from site_builder.model import GameRecord
from site_builder.render import charts, paging, summary
from site_builder.render.tables import Column, download_pages
from site_builder.render.writer import (
    Chained,
    Deferred,
    Digested,
    MadeWhenRead,
    Page,
    PageSet,
    made_where_rendered,
    render_fragment,
    root_for,
)
from site_builder.sitedata import EventColumn, Family, NavItem, Section, SiteData, event_key

_EVAL_CLIP = 1000  # cp shown at most on the evaluation graph
_BEST_GAMES = 5  # best and worst games shown on player and event pages
SEARCH_INDEX = paging.SEARCH_INDEX
T = TypeVar("T")


def _game_row(site: SiteData, game: GameRecord, player: str | None = None) -> dict[str, Any]:
    """A game as a table row (a fresh dict), with the opponent's side when ``player`` is given."""
    row = _base_row(site, game)
    if player is not None:
        white = game.white == player
        row["colour"] = "White" if white else "Black"
        row["opponent"] = game.black if white else game.white
        row["opponent_href"] = site.player_path(row["opponent"])
        row["opponent_elo"] = game.black_elo if white else game.white_elo
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


def _base_key(site: SiteData, game: GameRecord) -> Digested:
    """:func:`_base_row` as page keys hold it: digested once per game and build, and only
    the digest kept (a row for every game of a large site would be held until the end)."""
    found = site.state.game_row_keys.get(game.game_id)
    if found is None:
        found = site.state.game_row_keys[game.game_id] = Digested.only_digest(_base_row(site, game))
    return found


def _base_row(site: SiteData, game: GameRecord) -> dict[str, Any]:
    return {
        "href": site.game_path(game.game_id),
        "page": site.game_path(game.game_id),
        "game_id": game.game_id,
        "date": str(game.date),
        "event": game.event,
        "event_key": event_key(game),
        "event_href": site.event_path(event_key(game)),
        "round": game.round,
        "white": game.white,
        "black": game.black,
        "white_href": site.player_path(game.white),
        "black_href": site.player_path(game.black),
        "white_elo": game.white_elo,
        "black_elo": game.black_elo,
        "result": game.result,
        "eco": game.eco or "",
        "moves": game.full_moves,
        "time_class": game.time_class,
        "analysed": game.game_id in site.analysed,
    }


# --- players list and search index ---------------------------------------------------------

PLAYER_LIST_COLUMNS = (
    Column("player", "Player", "name as in the games (after the alias table)"),
    Column("games", "Games", "games in the content, every time control", True),
    Column("analysed", "Analysed", "games whose moves the engine analysed", True),
    Column("classical", "Classical", "classical games", True),
    Column("rapid", "Rapid", "rapid games", True),
    Column("blitz", "Blitz", "blitz games", True),
    Column("first_year", "First year", "year of the first dated game", True),
    Column("last_year", "Last year", "year of the last dated game", True),
    Column("page", "Page", "the player's page, relative to the site root"),
)


def _player_list_rows(
    site: SiteData, by_player: dict[str, list[GameRecord]]
) -> list[dict[str, Any]]:
    rows = []
    for name in sorted(by_player):
        games = by_player[name]
        years = [g.date.year for g in games if g.date.year]
        classes = Counter(g.time_class for g in games)
        rows.append(
            {
                "player": name,
                "href": site.player_path(name),
                "page": site.player_path(name),
                "games": len(games),
                "analysed": sum(1 for g in games if g.game_id in site.analysed),
                "classical": classes.get("classical", 0),
                "rapid": classes.get("rapid", 0),
                "blitz": classes.get("blitz", 0),
                "first_year": min(years) if years else None,
                "last_year": max(years) if years else None,
            }
        )
    return rows


def players_page(site: SiteData, by_player: dict[str, list[GameRecord]]) -> list[Page]:
    rows = _player_list_rows(site, by_player)
    downloads, files = download_pages("data/players", rows, PLAYER_LIST_COLUMNS)
    page = Page(
        "players.html", "players.html", {"title": "Players", "rows": rows, "downloads": downloads}
    )
    return [*paging.paged(page, site.settings.site.rows_per_page), *files]


def search_entries(
    site: SiteData, by_player: dict[str, list[GameRecord]]
) -> tuple[list[list[str]], list[list[str]]]:
    """The search box's players and events: [name, page, what the match line says]."""
    players = []
    for row in _player_list_rows(site, by_player):
        years = ""
        if row["first_year"]:
            years = f"{row['first_year']}–{row['last_year']}"
            if row["first_year"] == row["last_year"]:
                years = str(row["first_year"])
        players.append([row["player"], row["page"], f"{row['games']} games {years}".strip()])
    evs = []
    for key, games in sorted(site.games_of_event().items()):
        evs.append([key, site.event_path(key), f"{len(games)} games"])
    return players, evs


def search_index(site: SiteData, by_player: dict[str, list[GameRecord]]) -> PageSet:
    """``assets/search-index.js`` and ``assets/search/``: the search box's index in shards
    (:func:`paging.search_shards`), scripts that set a global (a ``.json`` file cannot be
    fetched from file://); made only when a player's or event's entry changed."""
    players, evs = search_entries(site, by_player)

    def make() -> list[Page]:
        files = paging.search_shards(players, evs)
        return [Page(path, "", {"bytes": data}) for path, data in sorted(files.items())]

    return PageSet("search-index", (players, evs), make)


# --- player page ---------------------------------------------------------------------------

PLAYER_GAME_COLUMNS = (
    Column("date", "Date", "date of the game (year.month.day; ?? when unknown)"),
    Column("event", "Event", "event name from the PGN"),
    Column("round", "Round", "round from the PGN"),
    Column("colour", "Colour", "the player's colour"),
    Column("opponent", "Opponent", "the opponent's name"),
    Column("opponent_elo", "Opp. Elo", "the opponent's Elo tag in this game", True),
    Column("result", "Result", "the game's result (White's score first)"),
    Column("score", "Score", "the player's points: 1, 0.5 or 0 (empty: unfinished)", True),
    Column("eco", "ECO", "opening code from the PGN tag"),
    Column("moves", "Moves", "full moves played", True),
    Column("time_class", "Class", "time control: classical, rapid or blitz"),
    Column("q", "q", "the player's quality q in the game (0–100; empty: not analysed)", True),
    Column("page", "Page", "the game's page, relative to the site root"),
)
H2H_COLUMNS = (
    Column("opponent", "Opponent", "the opponent's name"),
    Column("games", "Games", "games against the opponent (finished and unfinished)", True),
    Column("wins", "+", "wins", True),
    Column("draws", "=", "draws", True),
    Column("losses", "−", "losses", True),
    Column("points", "Points", "points scored", True),
    Column("score_pct", "Score %", "points per finished game, in %", True),
    Column("first", "First", "date of the first game against them"),
    Column("last", "Last", "date of the last game against them"),
    Column("page", "Page", "the opponent's page, relative to the site root"),
)


def _head_to_head(site: SiteData, rows: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    by_opp: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for r in rows:
        by_opp[r["opponent"]].append(r)
    out = []
    for opp, games in by_opp.items():
        finished = [g["score"] for g in games if g["score"] is not None]
        points = float(sum(finished))
        outcomes = Counter(finished)
        out.append(
            {
                "opponent": opp,
                "href": site.player_path(opp),
                "page": site.player_path(opp),
                "games": len(games),
                "wins": outcomes[1],
                "draws": outcomes[0.5],
                "losses": outcomes[0],
                "points": points,
                "score_pct": 100 * points / len(finished) if finished else None,
                "first": games[0]["date"],
                "last": games[-1]["date"],
            }
        )
    out.sort(key=lambda r: (-r["games"], r["opponent"]))
    return out


def _elo_tag_chart(player: str, games: Sequence[GameRecord]) -> dict[str, Any] | None:
    """The player's Elo tags over time, one marker per rated game; None when they do not
    change (the summary says as much) or fewer than two games are rated."""
    xs: list[str] = []
    ys: list[int] = []
    labels: list[str] = []
    for g in games:
        elo = g.white_elo if g.white == player else g.black_elo
        months = g.date.months
        if elo is None or months is None:
            continue
        m = int(months)
        xs.append(f"{m // 12:04d}-{m % 12 + 1:02d}-{g.date.day or 15:02d}")
        ys.append(elo)
        labels.append(f"{g.date}, {event_key(g)}")
    if len(set(ys)) < 2:
        return None
    return charts.figure(
        [
            {
                "type": "scatter",
                "mode": "lines+markers",
                "name": "Elo tag",
                "x": xs,
                "y": ys,
                "text": labels,
                "hovertemplate": "%{text}<br>Elo %{y}<extra></extra>",
                "line": {"color": charts.COLORS["blue"], "width": 1},
                "marker": {"color": charts.COLORS["blue"], "size": 6, "symbol": "circle"},
            }
        ],
        charts.layout(
            f"{player}: Elo in the games' tags",
            "date of the game",
            "Elo (PGN tag)",
            xaxis={"title": {"text": "date of the game"}, "type": "date", "automargin": True},
            yaxis={"title": {"text": "Elo (PGN tag)"}, "tickformat": "d", "automargin": True},
        ),
    )


def _quality_rows(
    site: SiteData, rows_by_id: dict[str, dict[str, Any]], ranked: Sequence[tuple[str, float]]
) -> list[dict[str, Any]]:
    return [{**rows_by_id[gid], "q": q} for gid, q in ranked if gid in rows_by_id]


@dataclass(frozen=True)
class RenderedSection:
    """A block of a player page, its partial already rendered."""

    title: str
    html: Markup


def _player_sections(
    site: SiteData,
    name: str,
    games: Sequence[GameRecord],
    families: Sequence[Family],
    views: dict[str, Digested],
) -> list[RenderedSection]:
    """Each family's blocks of the player page, made from its view and rendered. A family's
    blocks are kept in the build cache and rendered again only when its view, the player's
    game rows (every link a block shows is to the player's games, their events and
    opponents), the settings, the code or the templates change."""
    root = root_for(site.player_path(name))
    games_key = [_base_key(site, g) for g in games]
    out: list[RenderedSection] = []
    for fam in families:
        hook, view = fam.player_sections, views.get(fam.name)
        if hook is None or view is None:
            continue

        def made(
            hook: Callable[[Any], list[Section]] = hook, view: Any = view.value
        ) -> list[tuple[str, str]]:
            context = {"root": root, "settings": site.settings}
            env = site.state.jinja
            return [
                (s.title, str(render_fragment(s.template, {**context, "ctx": s.context}, env)))
                for s in hook(view)
            ]

        if not fam.cache_player_blocks:
            parts = made()
        else:
            key = [fam.name, name, root, view, games_key, site.settings_digest, site.cache.code]
            parts = _memo_fragment(site, f"{fam.name}-player", name, Digested(key).sha, made)
        out += [RenderedSection(title, Markup(html)) for title, html in parts]
    return out


def player_page(
    site: SiteData,
    name: str,
    games: Sequence[GameRecord],
    families: Sequence[Family],
    views: dict[str, Digested] | None = None,
) -> list[Page]:
    if views is None:
        views = player_views(site, name, families)
    sections = _player_sections(site, name, games, families, views)
    rows = [_game_row(site, g, name) for g in games]
    ranked = summary.player_games_by_quality(site, name)
    q_of = dict(ranked)
    for r in rows:
        r["q"] = q_of.get(r["game_id"])
    by_id = {r["game_id"]: r for r in rows}
    best = _quality_rows(site, by_id, ranked[:_BEST_GAMES])
    worst = []
    if len(ranked) > _BEST_GAMES:
        tail = ranked[-min(_BEST_GAMES, len(ranked) - _BEST_GAMES) :]
        worst = _quality_rows(site, by_id, list(reversed(tail)))
    h2h = _head_to_head(site, rows)
    slug = site.player_slugs[name]
    games_dl, files = download_pages(f"data/players/{slug}-games", rows, PLAYER_GAME_COLUMNS)
    h2h_dl, h2h_files = download_pages(f"data/players/{slug}-opponents", h2h, H2H_COLUMNS)
    for fam in families:
        view = views.get(fam.name)
        if fam.player_files is not None and view is not None:
            files += fam.player_files(view.value)
    counts = Counter(r["time_class"] for r in rows)
    years = [g.date.year for g in games if g.date.year]
    return [
        Page(
            site.player_path(name),
            "player.html",
            {
                "title": name,
                "player": name,
                "games": rows,
                "class_counts": dict(sorted(counts.items())),
                "years": (min(years), max(years)) if years else None,
                "events": len({r["event_key"] for r in rows}),
                "summary": summary.player_summary(site, families, name),
                "elo_chart": _elo_tag_chart(name, games),
                "best": best,
                "worst": worst,
                "analysed_games": len(ranked),
                "head_to_head": h2h,
                "sections": sections,
                "games_downloads": games_dl,
                "h2h_downloads": h2h_dl,
                "breadcrumbs": [("Players", "players.html")],
            },
        ),
        *files,
        *h2h_files,
    ]


def player_page_set(
    site: SiteData, name: str, games: Sequence[GameRecord], families: Sequence[Family]
) -> PageSet:
    """:func:`player_page` made only when what it reads changed: the player's games as
    listed, their ranks and summary, and each family's view of the player."""
    views: list[dict[str, Digested]] = []  # made once, by the key or the pages

    def views_once() -> dict[str, Digested]:
        if not views:
            views.append(player_views(site, name, families))
        return views[0]

    def key() -> Any:
        return (
            site.player_slugs[name],
            # A row from the player's side is its game's common row plus fields made from it.
            [_base_key(site, g) for g in games],
            summary.player_summary(site, families, name),
            summary.player_games_by_quality(site, name),
            list(views_once().items()),
        )

    return PageSet(
        f"player|{name}",
        key,
        lambda: player_page(site, name, games, families, views_once()),
        views.clear,
    )


def player_views(site: SiteData, name: str, families: Sequence[Family]) -> dict[str, Digested]:
    """Each family's view of the player (``render/views.py``), digested once; families with
    nothing to show for the player are left out."""
    out = {}
    for fam in families:
        if fam.player_view is not None:
            view = fam.player_view(site, name)
            if view is not None:
                out[fam.name] = Digested(view)
    return out


def game_views(site: SiteData, game: GameRecord, families: Sequence[Family]) -> list[Any]:
    """Each family's view of the game, in the families' order (None: no block)."""
    return [fam.game_view(site, game) for fam in families if fam.game_view is not None]


# --- game page -----------------------------------------------------------------------------


def _move_rows(site: SiteData, game: GameRecord) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    store = site.game_store
    plies = store.plies(game.game_id) if store is not None else []
    shown = ("ply", "best_san", "e_best", "e_played", "delta", "is_best")
    found = store.moves(game.game_id, shown) if store is not None else []
    analysed = {int(r["ply"]): r for r in found}
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


def game_page(
    site: SiteData,
    game: GameRecord,
    families: Sequence[Family],
    neighbours: tuple[GameRecord | None, GameRecord | None] = (None, None),
) -> Page:
    sections: list[Section] = []
    for fam in families:
        if fam.game_view is not None and fam.game_sections is not None:
            view = fam.game_view(site, game)
            if view is not None:
                sections.extend(fam.game_sections(view))
    # The move table and evaluation graph depend on the game and its analysis only: with a
    # game key they are rendered once and kept in the build cache.
    made = functools.cache(lambda: _move_rows(site, game))

    def eval_context() -> dict[str, Any]:
        return {"eval_chart": made()[1] or None}

    def moves_context() -> dict[str, Any]:
        return {"moves": made()[0]}

    parts: dict[str, tuple[str, Callable[[], dict[str, Any]]]] = {
        "eval_html": ("partials/game_eval.html", eval_context),
        "moves_html": ("partials/game_moves.html", moves_context),
    }
    game_key = site.cache.game_keys.get(game.game_id)
    fragments: dict[str, Any] = {
        name: (
            Deferred(
                (name, game_key),
                functools.partial(_fragment, site, t, game.game_id, game_key, context),
            )
            if game_key
            else render_fragment(t, context(), site.state.jinja)
        )
        for name, (t, context) in parts.items()
    }
    prev, nxt = neighbours
    return Page(
        site.game_path(game.game_id),
        "game.html",
        {
            "title": f"{game.white} – {game.black}",
            "game": _game_row(site, game),
            # What the page shows of the record (the moves come with ``moves``).
            "record": {
                "site": game.site,
                "time_class_reason": game.time_class_reason,
                "white_elo": game.white_elo,
                "black_elo": game.black_elo,
                "source": game.source,
                "line": game.line,
            },
            "tags": sorted(game.tags.items()),
            **fragments,
            "not_analysed": site.not_analysed.get(game.game_id, ""),
            "sections": sections,
            "previous": _game_row(site, prev) if prev else None,
            "next": _game_row(site, nxt) if nxt else None,
            "breadcrumbs": [
                ("Tournaments", "events.html"),
                (event_key(game), site.event_path(event_key(game))),
            ],
        },
    )


#: Fragments a render process holds before they go into the build cache in one commit.
_FRAGMENTS_HELD = 256


def _memo_fragment(site: SiteData, name: str, slot: str, key: str, make: Callable[[], T]) -> T:
    """``make()``, rendered HTML that depends on ``key`` only: kept in the build cache under
    the key and the templates' digest, and made only when missing. ``slot`` names what it
    shows (a player, a game): a fragment made for a slot replaces the one made for it
    before, which is deleted (:func:`store_fragments`)."""
    if not site.state.templates or site.cache.store is None:
        return make()
    entry = memo_entry(Kind.FRAGMENT, name, key, site.state.templates)
    made = site.state.new_fragments.get(entry)
    found: T | None = made[1] if made is not None else site.cache.store.get(entry)
    if found is None:
        found = make()
        site.state.new_fragments[entry] = (memo_entry(Kind.FRAGMENT_SLOT, name, slot), found)
        if len(site.state.new_fragments) >= _FRAGMENTS_HELD:
            store_fragments(site)
    return found


def store_fragments(site: SiteData) -> None:
    """The fragments rendered since the last call, into the build cache in one commit; the
    fragment each one's slot held before is deleted (it would stay for good: at 10x the
    demo, 27 MB of blocks after each tournament). Another site on the same build cache that
    still shows it renders it again when its page changes."""
    store = site.cache.store
    if store is not None and site.state.new_fragments:
        with store.transact():
            for entry, (slot, html) in site.state.new_fragments.items():
                store.set(entry, html)
                last = store.get(slot)
                if isinstance(last, str) and last != entry and last.startswith("fragment|"):
                    store.delete(last)
                store.set(slot, entry)
    site.state.new_fragments.clear()


def _fragment(
    site: SiteData, template: str, slot: str, key: str, context: Callable[[], dict[str, Any]]
) -> Markup:
    """``template`` rendered with ``context()``, which depends on ``key`` only (kept in the
    build cache as :func:`_memo_fragment` keeps it)."""
    html = _memo_fragment(
        site,
        template,
        slot,
        key,
        lambda: str(render_fragment(template, context(), site.state.jinja)),
    )
    return Markup(html)


def game_page_set(
    site: SiteData,
    game: GameRecord,
    families: Sequence[Family],
    neighbours: tuple[GameRecord | None, GameRecord | None] = (None, None),
) -> Page | PageSet:
    """:func:`game_page` made only when what it reads changed: the game and its analysis
    (``site.cache.game_keys``), the record's other fields, its row and its neighbours' rows, and
    the families' views of the game. Without a game key, the page itself."""
    game_key = site.cache.game_keys.get(game.game_id)
    if not game_key:
        return game_page(site, game, families, neighbours)

    def key() -> Any:
        return (
            game_key,
            (game.result, game.event, game.site, game.round, game.eco, game.time_class_reason),
            (game.source, game.line, sorted(game.tags.items())),
            site.not_analysed.get(game.game_id, ""),
            [_base_key(site, g) if g else None for g in (game, *neighbours)],
            game_views(site, game, families),
        )

    return PageSet(
        f"game|{game.game_id}", key, lambda: [game_page(site, game, families, neighbours)]
    )


# --- events --------------------------------------------------------------------------------

_CROSSTABLE_MAX = 20  # players; larger events show standings only

EVENT_LIST_COLUMNS = (
    Column("event", "Event", "event name and year"),
    Column("year", "Year", "year of the event's first dated game", True),
    Column("first_date", "From", "date of the first game"),
    Column("last_date", "To", "date of the last game"),
    Column("games", "Games", "games in the content", True),
    Column("players", "Players", "players with a game in the event", True),
    Column("analysed", "Analysed", "games whose moves the engine analysed", True),
    Column("classes", "Class", "time controls of the games"),
    Column("page", "Page", "the event's page, relative to the site root"),
)
STANDING_COLUMNS = (
    Column("rank", "Rank", "place by points (ties: fewer games first, then name)", True),
    Column("player", "Player", "the player's name"),
    Column("points", "Points", "points scored in finished games", True),
    Column("games", "Games", "finished games", True),
    Column("elo", "Elo", "mean of the player's Elo tags in the event", True),
    Column(
        "performance",
        "Elo perf.",
        "FIDE performance: mean Elo of rated opponents + dp(score against them); "
        "n/a below the minimum of rated games",
        True,
    ),
    Column(
        "performance_games",
        "Rated games",
        "games the performance rests on: those against an opponent with an Elo",
        True,
    ),
    Column(
        "performance_filled",
        "Elo filled",
        "of those, opponents whose missing Elo tag was filled from another game",
        True,
    ),
    Column("performance_note", "Perf. note", "what the performance rests on, or why n/a"),
)
EVENT_GAME_COLUMNS = (
    Column("round", "Round", "round from the PGN"),
    Column("date", "Date", "date of the game"),
    Column("white", "White", "White's name"),
    Column("black", "Black", "Black's name"),
    Column("white_elo", "White Elo", "White's Elo tag", True),
    Column("black_elo", "Black Elo", "Black's Elo tag", True),
    Column("result", "Result", "the game's result"),
    Column("eco", "ECO", "opening code from the PGN tag"),
    Column("moves", "Moves", "full moves played", True),
    Column("page", "Page", "the game's page, relative to the site root"),
)


def events_page(site: SiteData, by_event: dict[str, list[GameRecord]]) -> list[Page]:
    rows = []
    for key, games in by_event.items():
        players = {g.white for g in games} | {g.black for g in games}
        ordered = sorted(games, key=lambda g: g.date.sort_key)
        rows.append(
            {
                "event": key,
                "href": site.event_path(key),
                "page": site.event_path(key),
                "year": games[0].date.year,
                "first_date": str(ordered[0].date),
                "last_date": str(ordered[-1].date),
                "games": len(games),
                "players": len(players),
                "analysed": sum(1 for g in games if g.game_id in site.analysed),
                "classes": ", ".join(sorted({g.time_class for g in games})),
                "sort": ordered[0].date.sort_key,
            }
        )
    rows.sort(key=lambda r: (r["sort"], r["event"]), reverse=True)
    for r in rows:
        del r["sort"]
    downloads, files = download_pages("data/events", rows, EVENT_LIST_COLUMNS)
    context = {"title": "Tournaments and matches", "rows": rows, "downloads": downloads}
    page = Page("events.html", "events.html", context)
    return [*paging.paged(page, site.settings.site.rows_per_page, name="event"), *files]


def _perf_columns(cols: Sequence[EventColumn]) -> list[Column]:
    out = []
    for c in cols:
        out.append(Column(c.key, c.label, c.legend, True))
        if c.low or c.high:
            out.append(Column(f"{c.key}_lo", f"{c.label} low", "lower end of the interval", True))
            out.append(Column(f"{c.key}_hi", f"{c.label} high", "upper end of the interval", True))
    return out


def event_page(
    site: SiteData, key: str, games: list[GameRecord], families: Sequence[Family]
) -> list[Page]:
    table = events.standings(games, site.elos)
    order = [s.player for s in table]
    perf = summary.event_performance(site, families, key)
    min_games = site.settings.results.performance_min_games
    rows = []
    for i, s in enumerate(table, start=1):
        figure = s.performance_figure(min_games)
        row: dict[str, Any] = {
            "rank": i,
            "player": s.player,
            "href": site.player_path(s.player),
            "page": site.player_path(s.player),
            "points": s.points,
            "games": s.games,
            "elo": s.elo,
            "performance": figure.value,
            "performance_games": figure.rated_games,
            "performance_filled": figure.filled,
            "performance_note": figure.note,
        }
        for c in perf:
            row[c.key] = c.values.get(s.player)
            row[f"{c.key}_lo"] = c.low.get(s.player)
            row[f"{c.key}_hi"] = c.high.get(s.player)
            row[f"{c.key}_note"] = c.notes.get(s.player, "")
        rows.append(row)
    cross = events.crosstable(games, order) if len(order) <= _CROSSTABLE_MAX else None
    # A large (Swiss) event: the crosstable round by round instead of player by player.
    rounds, by_round = events.round_table(games, order) if cross is None else ([], [])
    if not rounds:
        by_round = []
    round_rows = [
        {
            "rank": i + 1,
            "player": p,
            **dict(zip([f"round_{r}" for r in rounds], cells, strict=True)),
        }
        for i, (p, cells) in enumerate(zip(order[: len(by_round)], by_round, strict=True))
    ]
    round_cols = (
        Column("rank", "Rank", "final rank in the standings", numeric=True),
        Column("player", "Player", "player name"),
        *(
            Column(
                f"round_{r}",
                f"Round {r}",
                f"round {r}: opponent's rank, colour (w/b) and result (1, ½, 0)",
            )
            for r in rounds
        ),
    )
    sections: list[Section] = []
    for fam in families:
        if fam.event_sections is not None:
            sections.extend(fam.event_sections(site, key))
    ordered = sorted(games, key=lambda g: (g.date.sort_key, g.round, g.game_id))
    game_rows = [_game_row(site, g) for g in ordered]
    by_id = {r["game_id"]: r for r in game_rows}
    best = [
        {**by_id[gid], "q": q, "q_white": qw, "q_black": qb}
        for gid, q, qw, qb in summary.event_games_by_quality(site, key)[:_BEST_GAMES]
    ]
    slug = site.event_slugs[key]
    st_cols = (*STANDING_COLUMNS, *_perf_columns(perf), Column("page", "Page", "player page"))
    st_dl, st_files = download_pages(f"data/events/{slug}-standings", rows, st_cols)
    g_dl, g_files = download_pages(f"data/events/{slug}-games", game_rows, EVENT_GAME_COLUMNS)
    r_dl, r_files = (
        download_pages(f"data/events/{slug}-rounds", round_rows, round_cols)
        if rounds
        else (None, [])
    )
    for fam in families:
        if fam.event_files is not None:
            r_files += fam.event_files(site, key)
    dates = [g.date for g in ordered]
    return [
        Page(
            site.event_path(key),
            "event.html",
            {
                "title": key,
                "standings": rows,
                "min_rated": min_games,
                "perf": perf,
                "crosstable": cross,
                "rounds": rounds,
                "round_rows": round_rows,
                "rounds_downloads": r_dl,
                "order": order,
                "games": game_rows,
                "best": best,
                "sections": sections,
                "dates": (str(dates[0]), str(dates[-1])) if dates else None,
                "classes": sorted({g.time_class for g in games}),
                "standings_downloads": st_dl,
                "games_downloads": g_dl,
                "breadcrumbs": [("Tournaments", "events.html")],
            },
        ),
        *st_files,
        *g_files,
        *r_files,
    ]


def event_page_set(
    site: SiteData, key: str, games: list[GameRecord], families: Sequence[Family]
) -> PageSet:
    """:func:`event_page` made only when what it reads changed: the event's games as listed,
    its players' performance columns, the families' sections and the games' quality."""

    def page_key() -> Any:
        return (
            site.event_slugs[key],
            [_base_key(site, g) for g in games],
            [site.elos.get((g.game_id, p)) for g in games for p in (g.white, g.black)],
            site.settings.results.performance_min_games,
            summary.event_performance(site, families, key),
            [fam.event_sections(site, key) for fam in families if fam.event_sections is not None],
            summary.event_games_by_quality(site, key),
        )

    return PageSet(f"event|{key}", page_key, lambda: event_page(site, key, games, families))


# --- report and methodology ----------------------------------------------------------------


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
                "facts": site.state.facts,
                "not_analysed": Counter(site.not_analysed.values()).most_common(),
                "name_groups": site.state.facts.get("name_groups", []),
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
            "facts": site.state.facts,
        },
    )


def make_core_family(families: Sequence[Family]) -> Family:
    def pages(site: SiteData) -> Sequence[Page | PageSet]:
        by_player = _games_of(site)
        by_event = site.games_of_event()
        out: list[Page | PageSet] = [
            made_where_rendered("core|lists", lambda: players_page(site, by_player)),
            search_index(site, by_player),
            methodology_page(site, families),
            made_where_rendered("core|events", lambda: events_page(site, by_event)),
        ]
        for key, event_games in sorted(by_event.items()):
            out.append(event_page_set(site, key, event_games, families))
        out.append(made_where_rendered("core|report", lambda: report_page(site)))
        neighbours: dict[str, tuple[GameRecord | None, GameRecord | None]] = {}
        for games in by_event.values():
            ordered = sorted(games, key=lambda g: (g.date.sort_key, g.round, g.game_id))
            for i, g in enumerate(ordered):
                prev = ordered[i - 1] if i > 0 else None
                nxt = ordered[i + 1] if i + 1 < len(ordered) else None
                neighbours[g.game_id] = (prev, nxt)
        # A page set for every player and every game: made where it is rendered.
        player_sets = MadeWhenRead(
            sorted(by_player.items()),
            lambda item: player_page_set(site, item[0], item[1], families),
        )
        game_sets = MadeWhenRead(
            site.games,
            lambda g: game_page_set(site, g, families, neighbours.get(g.game_id, (None, None))),
        )
        return Chained([out, player_sets, game_sets])

    return Family(
        name="core",
        compute=lambda site: None,
        pages=pages,
        pages_as_one_item=False,
        nav=(
            NavItem("Players", "players.html"),
            NavItem("Tournaments", "events.html"),
            NavItem("Methodology", "methodology.html"),
            NavItem("Build report", "report.html"),
        ),
    )
