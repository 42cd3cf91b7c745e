"""Player summary cards and event performance columns, read from each family's results (pure).

A family may answer for itself through ``Family.player_summary`` and
``Family.event_performance``; for families that do not (yet), the functions here read their
result objects defensively: a missing family, attribute or column gives no item, never an
error. :data:`PLAYER_SUMMARY` and :data:`EVENT_PERFORMANCE` map a family name to its reader.

Also here: the games of a player or an event ordered by quality of play (from the quality
family's per-game table), for the "best and worst games" blocks.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from typing import Any

import numpy as np
import pandas as pd

from site_builder.frames import memo_on as _memo
from site_builder.frames import positions_by, records_by
from site_builder.model import GameRecord
from site_builder.sitedata import EventColumn, Family, SiteData, SummaryItem

#: z for the two-sided 95% normal interval of a mean.
Z95 = 1.959964


def events_of(site: SiteData) -> dict[str, list[GameRecord]]:
    """``site.games_of_event()``, grouped once per site."""
    found: dict[str, list[GameRecord]] = _memo(site, "events", site.games_of_event)
    return found


def _num(value: Any) -> float | None:
    try:
        f = float(value)
    except (TypeError, ValueError):
        return None
    return None if math.isnan(f) or math.isinf(f) else f


def _frame(obj: Any, name: str, *columns: str) -> pd.DataFrame | None:
    """``obj.name`` when it is a DataFrame with ``columns``, else None."""
    frame = getattr(obj, name, None)
    if not isinstance(frame, pd.DataFrame) or any(c not in frame.columns for c in columns):
        return None
    return frame


def _rows_of(frame: pd.DataFrame, player: str, columns: tuple[str, ...]) -> list[dict[str, Any]]:
    """The player's rows of ``frame`` with only those of ``columns`` it has (the others read
    as missing), in frame order."""
    present: tuple[str, ...] = _memo(
        frame, "present|" + ",".join(columns), lambda: tuple(c for c in columns if c in frame)
    )
    found: list[dict[str, Any]] = records_by(frame, "player").get_columns(player, present, [])
    return found


def _row_of(frame: pd.DataFrame, player: str, columns: tuple[str, ...]) -> dict[str, Any] | None:
    """The player's (last) row of ``frame`` (only ``columns``), None when it has none."""
    rows = _rows_of(frame, player, columns)
    return rows[-1] if rows else None


def _ranks(frame: pd.DataFrame) -> tuple[dict[str, int], int]:
    """Rank by row order among the rows whose ``status`` is empty, and how many those are."""
    listed = [str(p) for p, s in zip(frame["player"], frame["status"], strict=True) if not s]
    return {p: i for i, p in enumerate(listed, start=1)}, len(listed)


def mean_interval(values: Iterable[float]) -> tuple[float | None, float | None, float | None]:
    """(mean, low, high): the mean and its 95% normal interval (needs two values)."""
    xs = [v for v in values if not math.isnan(v)]
    if not xs:
        return None, None, None
    mean = sum(xs) / len(xs)
    if len(xs) < 2:
        return mean, None, None
    var = sum((x - mean) ** 2 for x in xs) / (len(xs) - 1)
    half = Z95 * math.sqrt(var / len(xs))
    return mean, mean - half, mean + half


# --- quality -------------------------------------------------------------------------------


def _quality_games(site: SiteData) -> pd.DataFrame | None:
    res = site.state.results.get("quality")
    return _frame(res, "games", "game_id", "player", "q", "moves", "months")


def _quality_columns(games: pd.DataFrame) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The per-game table's moves, months and q as float arrays (NaN when missing), once."""
    found: tuple[np.ndarray, np.ndarray, np.ndarray] = _memo(
        games,
        "moves_months_q",
        lambda: tuple(
            games[c].to_numpy(dtype="float64", na_value=np.nan) for c in ("moves", "months", "q")
        ),
    )
    return found


def _quality_item(
    site: SiteData, frame: pd.DataFrame, player: str, label: str, anchor: str, own_end: bool
) -> SummaryItem | None:
    rows = _rows_of(frame, player, ("status", "window_from", "window_to", "index", "games"))
    if not rows:
        return None
    row = rows[0]
    ranks, of = _memo(frame, "ranks", lambda: _ranks(frame))
    href = f"index.html#{anchor}"
    status = str(row.get("status") or "")
    window = f"{row.get('window_from')} – {row.get('window_to')}"
    if status:
        return SummaryItem(label, None, 1, href=href, note=status)
    cfg = site.settings.quality
    low = high = None
    games = _quality_games(site)
    at = positions_by(games, "player").get(player) if games is not None else None
    if games is not None and at is not None:
        moves, months, q = _quality_columns(games)
        when = months[at]
        mine = (moves[at] > 0) & ~np.isnan(when)
        end = float(when[mine].max()) if own_end and mine.any() else site.as_of_months
        if end is not None and mine.any():
            win = mine & (end - cfg.window_months < when) & (when <= end)
            _, low, high = mean_interval(q[at][win].tolist())
    return SummaryItem(
        label,
        _num(row.get("index")),
        1,
        "",
        low,
        high,
        "95% interval of the mean game q" if low is not None else "",
        ranks.get(player),
        of,
        href,
        f"{row.get('games')} games, {window}",
    )


def quality_summary(site: SiteData, player: str) -> list[SummaryItem]:
    """The current and the all-time quality index, with the 95% interval of the mean."""
    res = site.state.results.get("quality")
    out = []
    for name, label, anchor, own in (
        ("current", "Quality index, current", "current", False),
        ("historical", "Quality index, all-time", "historical", True),
    ):
        frame = _frame(res, name, "player", "index", "status")
        if frame is not None:
            item = _quality_item(site, frame, player, label, anchor, own)
            if item is not None:
                out.append(item)
    return out


def quality_event(site: SiteData, key: str) -> list[EventColumn]:
    """Mean game quality q of each player over the event's analysed games."""
    games = _quality_games(site)
    if games is None:
        return []
    event_games = events_of(site).get(key, [])

    def make() -> dict[str, dict[str, list[float]]]:
        """event → player → q of each analysed game, in the table's order."""
        event_of = {g.game_id: event_key for event_key, gs in events_of(site).items() for g in gs}
        scored = games[games["moves"] > 0]
        out: dict[str, dict[str, list[float]]] = {}
        for gid, p, q in zip(scored["game_id"], scored["player"], scored["q"], strict=True):
            event = event_of.get(str(gid))
            if event is not None:
                out.setdefault(event, {}).setdefault(str(p), []).append(float(q))
        return out

    by_event: dict[str, dict[str, list[float]]] = _memo(games, "by_event", make)
    qs = by_event.get(key, {})
    values: dict[str, float | None] = {}
    low: dict[str, float | None] = {}
    high: dict[str, float | None] = {}
    for name in sorted(qs):
        values[name], low[name], high[name] = mean_interval(qs[name])
    if not values:
        return []
    notes = {
        p: "no analysed classical game in this event"
        for g in event_games
        for p in (g.white, g.black)
        if p not in values
    }
    return [
        EventColumn(
            "quality",
            "Quality q",
            values,
            "mean quality q (0–100) of the player's analysed classical games in the event; "
            "in brackets its 95% interval (mean ± 1.96 standard errors, two games or more)",
            1,
            low,
            high,
            notes,
        )
    ]


# --- results (improved Elo, rapid, blitz, fighters) ------------------------------------------

_RESULTS_LISTS = (
    ("current", "Improved Elo", "elo.html"),
    ("rapid", "Rapid rating", "rapid.html"),
    ("blitz", "Blitz rating", "blitz.html"),
    ("fighter", "Fighter ranking: Short Draw Factor", "fighters.html"),
)


def _results_ranks(res: Any) -> dict[str, tuple[dict[str, int], int]]:
    from site_builder.metrics import results

    lists = getattr(res, "lists", None)
    out: dict[str, tuple[dict[str, int], int]] = {}
    if not isinstance(lists, dict):
        return out
    for key, _label, _href in _RESULTS_LISTS:
        frame = lists.get(key)
        if not isinstance(frame, pd.DataFrame) or "status" not in frame.columns:
            continue
        order = results.fighter_order(frame) if key == "fighter" else results.listed(frame)
        out[str(key)] = ({str(p): i for i, p in enumerate(order["player"], 1)}, len(order))
    return out


def results_summary(site: SiteData, player: str) -> list[SummaryItem]:
    """Improved Elo, rapid and blitz ratings at the as-of date and the fighter ranking."""
    res = site.state.results.get("results")
    lists = getattr(res, "lists", None)
    if not isinstance(lists, dict):
        return []
    ranks = _memo(res, "ranks", lambda: _results_ranks(res))
    out = []
    for key, label, href in _RESULTS_LISTS:
        frame = lists.get(key)
        if not isinstance(frame, pd.DataFrame) or "player" not in frame.columns:
            continue
        row = _row_of(frame, player, ("status", "sdf", "rating", "games"))
        if row is None:
            continue
        rank, of = ranks.get(key, ({}, 0))
        status = str(row.get("status") or "")
        if key == "fighter":  # ranked by SDF, fewest short draws first
            value, digits = _num(row.get("sdf")), 1
            note = "fewest short draws first; among the players of the fighter list"
        else:
            value, digits = _num(row.get("rating")), 0
            note = f"{row.get('games')} games counted"
        out.append(
            SummaryItem(
                label,
                value,
                digits,
                rank=rank.get(player),
                of=of,
                href=href,
                note=status or note,
            )
        )
    return out


# --- intrinsic (IPR) and Bayesian skill ----------------------------------------------------


def _interval_summary(
    site: SiteData,
    player: str,
    family: str,
    columns: tuple[str, str, str],
    label: str,
    href: str,
    digits: int,
    unit: str,
    interval: str,
) -> list[SummaryItem]:
    res = site.state.results.get(family)
    value, lo, hi = columns
    frame = _frame(res, "players", "player", value, lo, hi, "status")
    if frame is None:
        status = str(getattr(res, "status", "") or "")
        return [SummaryItem(label, None, digits, unit, href=href, note=status)] if status else []
    row = _row_of(
        frame, player, (value, lo, hi, "status", "window_from", "window_to", "games", "turns")
    )
    if row is None:
        return []
    ranks, of = _memo(frame, "ranks", lambda: _ranks(frame))
    status = str(row.get("status") or "")
    window = ""
    if row.get("window_from") and row.get("window_to"):
        window = f" ({row['window_from']} – {row['window_to']})"
    return [
        SummaryItem(
            label,
            None if status else _num(row.get(value)),
            digits,
            unit,
            None if status else _num(row.get(lo)),
            None if status else _num(row.get(hi)),
            interval,
            ranks.get(player),
            of,
            href,
            status or f"{row.get('games')} games, {row.get('turns')} turns{window}",
        )
    ]


def intrinsic_summary(site: SiteData, player: str) -> list[SummaryItem]:
    return _interval_summary(
        site,
        player,
        "intrinsic",
        ("ipr", "ipr_lo", "ipr_hi"),
        "Intrinsic rating (IPR)",
        "intrinsic.html",
        0,
        "",
        "95% bootstrap interval",
    )


def bayesian_summary(site: SiteData, player: str) -> list[SummaryItem]:
    return _interval_summary(
        site,
        player,
        "bayesian",
        ("c", "c_lo", "c_hi"),
        "Bayesian skill c̄",
        "skill.html",
        3,
        "",
        "95% credible region",
    )


def intrinsic_event(site: SiteData, key: str) -> list[EventColumn]:
    """Each player's IPR over their moves in the event, with its bootstrap interval."""
    res = site.state.results.get("intrinsic")
    frame = _frame(res, "event_players", "event", "player", "ipr", "ipr_lo", "ipr_hi", "status")
    if frame is None:
        return []
    mine = records_by(frame, "event").get(key, [])
    if not mine:
        return []
    values: dict[str, float | None] = {}
    low: dict[str, float | None] = {}
    high: dict[str, float | None] = {}
    notes: dict[str, str] = {}
    for r in mine:
        p = str(r["player"])
        status = str(r.get("status") or "")
        values[p] = None if status else _num(r["ipr"])
        low[p] = None if status else _num(r["ipr_lo"])
        high[p] = None if status else _num(r["ipr_hi"])
        if status:
            notes[p] = status
    return [
        EventColumn(
            "ipr",
            "IPR",
            values,
            "intrinsic performance rating of the player's moves in the event (Elo scale); "
            "in brackets its 95% bootstrap interval",
            0,
            low,
            high,
            notes,
        )
    ]


#: family name → reader, for families without their own ``player_summary``.
PLAYER_SUMMARY: dict[str, Callable[[SiteData, str], list[SummaryItem]]] = {
    "quality": quality_summary,
    "results": results_summary,
    "intrinsic": intrinsic_summary,
    "bayesian": bayesian_summary,
}
#: family name → reader, for families without their own ``event_performance``.
EVENT_PERFORMANCE: dict[str, Callable[[SiteData, str], list[EventColumn]]] = {
    "quality": quality_event,
    "intrinsic": intrinsic_event,
}


def player_summary(site: SiteData, families: Iterable[Family], player: str) -> list[SummaryItem]:
    out: list[SummaryItem] = []
    for fam in families:
        hook = fam.player_summary or PLAYER_SUMMARY.get(fam.name)
        if hook is not None and fam.name in site.state.results:
            out.extend(hook(site, player))
    return out


def event_performance(site: SiteData, families: Iterable[Family], key: str) -> list[EventColumn]:
    out: list[EventColumn] = []
    for fam in families:
        hook = fam.event_performance or EVENT_PERFORMANCE.get(fam.name)
        if hook is not None and fam.name in site.state.results:
            out.extend(hook(site, key))
    return out


# --- games by quality ----------------------------------------------------------------------


def _game_q(site: SiteData) -> dict[str, dict[str, float]]:
    """game_id → {player: q} for every analysed side (grouped once)."""
    games = _quality_games(site)
    if games is None:
        return {}

    def make() -> dict[str, dict[str, float]]:
        out: dict[str, dict[str, float]] = {}
        scored = games[games["moves"] > 0]
        for gid, p, q in zip(scored["game_id"], scored["player"], scored["q"], strict=True):
            out.setdefault(str(gid), {})[str(p)] = float(q)
        return out

    found: dict[str, dict[str, float]] = _memo(games, "by_game", make)
    return found


def player_games_by_quality(site: SiteData, player: str) -> list[tuple[str, float]]:
    """(game_id, the player's q) for each analysed game, best first (ties by game id)."""
    games = _quality_games(site)
    if games is None:
        return []

    def make() -> dict[str, list[tuple[str, float]]]:
        out: dict[str, list[tuple[str, float]]] = {}
        for gid, qs in _game_q(site).items():
            for p, q in qs.items():
                out.setdefault(p, []).append((gid, q))
        return {p: sorted(mine, key=lambda t: (-t[1], t[0])) for p, mine in out.items()}

    by_player: dict[str, list[tuple[str, float]]] = _memo(games, "by_player", make)
    return by_player.get(player, [])


def event_games_by_quality(site: SiteData, key: str) -> list[tuple[str, float, float, float]]:
    """(game_id, mean q, White's q, Black's q) of the event's games with both sides analysed,
    best first."""
    by_game = _game_q(site)
    out = []
    for g in events_of(site).get(key, []):
        qs = by_game.get(g.game_id, {})
        if g.white in qs and g.black in qs:
            qw, qb = qs[g.white], qs[g.black]
            out.append((g.game_id, (qw + qb) / 2, qw, qb))
    return sorted(out, key=lambda t: (-t[1], t[0]))
