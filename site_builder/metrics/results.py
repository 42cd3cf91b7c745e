"""Fischl's results statistics: per-game facts, inclusion scopes and lists (METHODS.md §2).

Pure: game records, material traces and Elo runs in; DataFrames out. A *scope* is one list's
selection of games (class, period, opponent rating) and its thresholds; every player with a
game in the scope gets a row, listed or not, and an unlisted row says why.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from site_builder.config import ResultsSection
from site_builder.metrics import style
from site_builder.metrics.elo_fill import PlayerElo
from site_builder.metrics.events import performance_figure
from site_builder.model import GameRecord

ROW_COLUMNS = [
    "game_id",
    "player",
    "opponent",
    "white",
    "time_class",
    "year",
    "months",
    "score",
    "draw",
    "player_elo",
    "opponent_elo",
    "opponent_rating",
    "opponent_filled",
    "plies",
    "full_moves",
    "eco",
    "material",
    "sdf_factor",
    "sdf_elo_source",
    "short_draw",
    "sacrifice",
    "deficit_plies",
    "endgame",
    "opening_draw",
    "elo_before",
    "elo_after",
]


@dataclass(frozen=True)
class GameMaterial:
    """What the style statistics take from one game's material trace."""

    #: An endgame game (see :func:`style.is_endgame_game`).
    endgame: bool
    #: White's and Black's material in the final position.
    material: tuple[int, int]
    #: White's and Black's longest run of half-moves down material, exchanges disregarded.
    deficit: tuple[int, int]


def game_material(
    trace: Sequence[style.PlyMaterial], full_moves: int, cfg: ResultsSection
) -> GameMaterial:
    endgame = style.is_endgame_game(
        trace,
        full_moves,
        cfg.endgame_min_moves,
        cfg.endgame_check_move,
        cfg.endgame_max_balance,
    )
    last = trace[-1] if trace else (style.START_MATERIAL, style.START_MATERIAL, -1)
    deficit = tuple(
        style.longest_deficit(style.exchange_balances(trace, white), cfg.sacrifice_deficit)
        for white in (True, False)
    )
    return GameMaterial(endgame, (last[0], last[1]), (deficit[0], deficit[1]))


@dataclass(frozen=True)
class GameFacts:
    """What the style statistics need of one game, beside its record."""

    material: GameMaterial
    #: ECO from the tag or classified from the moves; None when neither.
    eco: str | None


def eco_statistics(
    games: Sequence[GameRecord], ecos: Mapping[str, str | None], classes: Sequence[str]
) -> pd.DataFrame:
    """Per ECO code: games, White wins, draws, Black wins, White's score and the draw share.

    Counts finished games of the given classes; ``classical_*`` columns count classical only.
    """
    rows = []
    for g in games:
        eco = ecos.get(g.game_id)
        if eco is None or g.score_white is None or g.time_class not in classes:
            continue
        rows.append((eco, g.score_white, g.time_class == "classical"))
    columns = ["eco", "games", "white_wins", "draws", "black_wins", "white_score", "draw_pct"]
    columns += ["classical_games", "classical_draw_pct"]
    if not rows:
        return pd.DataFrame(columns=columns)
    frame = pd.DataFrame(rows, columns=["eco", "score", "classical"])
    frame["white_win"] = frame["score"] == 1.0
    frame["is_draw"] = frame["score"] == 0.5
    frame["black_win"] = frame["score"] == 0.0
    frame["c_draw"] = frame["is_draw"] & frame["classical"]
    out = frame.groupby("eco", sort=True).agg(
        games=("score", "size"),
        white_wins=("white_win", "sum"),
        draws=("is_draw", "sum"),
        black_wins=("black_win", "sum"),
        white_score=("score", "mean"),
        classical_games=("classical", "sum"),
        c_draws=("c_draw", "sum"),
    )
    out["draw_pct"] = 100.0 * out["draws"] / out["games"]
    out["white_score"] = 100.0 * out["white_score"]
    out["classical_draw_pct"] = np.where(
        out["classical_games"] > 0,
        100.0 * out["c_draws"] / out["classical_games"].clip(lower=1),
        np.nan,
    )
    out = out.reset_index()
    for c in ("games", "white_wins", "draws", "black_wins", "classical_games"):
        out[c] = out[c].astype(int)
    return out[columns]


def player_games(
    games: Sequence[GameRecord],
    facts: Mapping[str, GameFacts],
    elo_updates: pd.DataFrame,
    draw_pct: Mapping[str, float],
    cfg: ResultsSection,
    elos: Mapping[tuple[str, str], PlayerElo] | None = None,
) -> pd.DataFrame:
    """One row per (finished game, player) with every per-game statistic of §2.

    ``opponent_rating`` is the opponent's Elo with a missing tag filled (``elos``, see
    :mod:`~site_builder.metrics.elo_fill`; the performances use it), ``opponent_filled``
    says it was filled (the performances and the lists' opponent threshold use it);
    ``opponent_elo`` is the tag as written.

    ``elo_updates`` (the Elo runs of all classes, see :func:`elo.sequential_elo`) gives the
    rating before and after; the Short Draw Factor's Elo term uses the Elo tags when both are
    present, else both players' ratings before the game, else equal ratings.
    """
    before: dict[tuple[str, str], tuple[float, float]] = {}
    for gid, player, b, a in zip(
        elo_updates["game_id"],
        elo_updates["player"],
        elo_updates["before"],
        elo_updates["after"],
        strict=True,
    ):
        before[(gid, player)] = (float(b), float(a))
    rows: list[dict[str, object]] = []
    for g in games:
        score_white = g.score_white
        if score_white is None:
            continue
        fact = facts[g.game_id]
        draw = score_white == 0.5
        if g.white_elo is not None and g.black_elo is not None:
            elo_w, elo_b, source = float(g.white_elo), float(g.black_elo), "Elo tags"
        elif (g.game_id, g.white) in before and (g.game_id, g.black) in before:
            elo_w = before[(g.game_id, g.white)][0]
            elo_b = before[(g.game_id, g.black)][0]
            source = "improved Elo before the game"
        else:
            elo_w = elo_b = 0.0
            source = "no rating: taken as equal"
        endgame = fact.material.endgame
        for white in (True, False):
            player, opponent = (g.white, g.black) if white else (g.black, g.white)
            score = score_white if white else 1.0 - score_white
            side = 0 if white else 1
            material = fact.material.material[side]
            factor = math.nan
            if draw:
                factor = style.short_draw_factor(
                    material,
                    g.plies,
                    elo_w,
                    elo_b,
                    white,
                    max_plies=cfg.sdf_plies,
                    points_per_ply=cfg.sdf_points_per_ply,
                    max_penalty=cfg.sdf_max_penalty,
                    white_bonus=cfg.sdf_white_bonus,
                    elo_divisor=cfg.sdf_elo_divisor,
                )
            run = fact.material.deficit[side]
            ratings = before.get((g.game_id, player))
            tag = g.black_elo if white else g.white_elo
            rows.append(
                {
                    "game_id": g.game_id,
                    "player": player,
                    "opponent": opponent,
                    "white": white,
                    "time_class": g.time_class,
                    "year": g.date.year,
                    "months": g.date.months,
                    "score": score,
                    "draw": draw,
                    "player_elo": g.white_elo if white else g.black_elo,
                    "opponent_elo": tag,
                    **opponent_rating(g.game_id, opponent, tag, elos),
                    "plies": g.plies,
                    "full_moves": g.full_moves,
                    "eco": fact.eco,
                    "material": material,
                    "sdf_factor": factor,
                    "sdf_elo_source": source if draw else "",
                    "short_draw": draw and factor > 0,
                    "sacrifice": score == 1.0 and run >= cfg.sacrifice_plies,
                    "deficit_plies": run,
                    "endgame": endgame,
                    "opening_draw": opening_draw(fact.eco, draw_pct),
                    "elo_before": ratings[0] if ratings else math.nan,
                    "elo_after": ratings[1] if ratings else math.nan,
                }
            )
    frame = pd.DataFrame(rows, columns=ROW_COLUMNS)
    for c in ("player_elo", "opponent_elo", "opponent_rating", "year"):
        frame[c] = frame[c].astype("Int64")
    frame["months"] = frame["months"].astype(float)
    return frame


def opponent_rating(
    game_id: str,
    opponent: str,
    tag: int | None,
    elos: Mapping[tuple[str, str], PlayerElo] | None,
) -> dict[str, Any]:
    """A row's ``opponent_rating`` (the Elo filled from ``elos``, else the ``tag``) and
    ``opponent_filled``."""
    opp = elos.get((game_id, opponent)) if elos is not None else None
    if opp is None and tag is not None:
        opp = PlayerElo(tag)
    return {
        "opponent_rating": int(opp.elo) if opp is not None else None,
        "opponent_filled": opp is not None and opp.filled,
    }


def opening_draw(eco: str | None, draw_pct: Mapping[str, float]) -> float:
    """A row's ``opening_draw``: the draw rate of its game's opening (NaN without one)."""
    return float(draw_pct.get(eco, math.nan)) if eco else math.nan


@dataclass(frozen=True)
class Scope:
    """One list's games and thresholds."""

    key: str
    title: str
    time_class: str
    #: Games with months in (after, until]; None = open.
    after: float | None
    until: float | None
    period: str
    min_rating: int
    #: Opponent's Elo tag needed for a game to count; 0 = every game counts.
    opponent_min_elo: int
    min_games: int
    #: Players whose last game in the scope is in this year or before need only
    #: ``early_min_games`` (Fischl's historic statistics up to 1950).
    early_until: int | None = None
    early_min_games: int = 0
    #: What the rating is: "rating at the end" or "peak year-end rating".
    rating_label: str = "improved Elo"

    def needs(self, last_year: int | None) -> int:
        early = self.early_until is not None and last_year is not None
        if early and last_year <= self.early_until:  # type: ignore[operator]
            return self.early_min_games
        return self.min_games


LIST_COLUMNS = [
    "player",
    "rating",
    "rating_note",
    "games",
    "all_games",
    "points",
    "score_pct",
    "mean_opponent_elo",
    "performance",
    "performance_games",
    "performance_filled",
    "draws",
    "short_draws",
    "sdf",
    "sacrifice_wins",
    "sacrifice_pct",
    "opening_draw_factor",
    "eco_games",
    "endgame_games",
    "endgame_points",
    "endgame_rated",
    "endgame_filled",
    "endgame_performance",
    "last_year",
    "status",
]


Row = Mapping[str, Any]


def row_records(rows: pd.DataFrame) -> list[dict[str, Any]]:
    """The rows of :func:`player_games` as plain dicts (missing Elo tags as None)."""
    # As rows.to_dict("records") gives them, a column at a time (much faster).
    columns = [str(c) for c in rows.columns]
    out = [
        dict(zip(columns, values, strict=True))
        for values in zip(*(rows[c].tolist() for c in rows.columns), strict=True)
    ]
    for r in out:
        for c in ("player_elo", "opponent_elo", "opponent_rating", "year"):
            if r[c] is pd.NA:
                r[c] = None
    return out


def in_scope(row: Row, scope: Scope) -> bool:
    """The row is in the scope's class and period (any opponent)."""
    m = row["months"]
    if row["time_class"] != scope.time_class or m is None or math.isnan(m):
        return False
    if scope.after is not None and not m > scope.after:
        return False
    return scope.until is None or m <= scope.until


def class_rows(recs: Sequence[Row]) -> dict[str, tuple[list[Row], np.ndarray]]:
    """The rows of each time class and their months (NaN when undated), for
    :func:`scope_rows`."""
    out: dict[str, tuple[list[Row], np.ndarray]] = {}
    for cls in sorted({str(r["time_class"]) for r in recs}):
        rows = [r for r in recs if r["time_class"] == cls]
        months = np.array([math.nan if r["months"] is None else r["months"] for r in rows])
        out[cls] = (rows, months.astype(float))
    return out


def scope_rows(by_class: Mapping[str, tuple[list[Row], np.ndarray]], scope: Scope) -> list[Row]:
    """The rows :func:`in_scope` keeps (``by_class`` from :func:`class_rows`), in order,
    without a pass over every row."""
    rows, months = by_class.get(scope.time_class, ([], np.zeros(0)))
    keep = ~np.isnan(months)
    if scope.after is not None:
        keep &= months > scope.after
    if scope.until is not None:
        keep &= months <= scope.until
    return [rows[i] for i in np.flatnonzero(keep)]


def counts(row: Row, opponent_min_elo: int) -> bool:
    """The opponent's Elo tag (filled when missing) reaches the threshold (always true for
    threshold 0)."""
    if opponent_min_elo <= 0:
        return True
    elo = _opponent_rating(row)
    return elo is not None and elo >= opponent_min_elo


def _opponent_rating(row: Row) -> Any:
    """The opponent's Elo, filled when the tag is missing (rows made without it: the tag)."""
    return row.get("opponent_rating", row["opponent_elo"])


def performance_of(rows: Sequence[Row], min_games: int = 1) -> float:
    """FIDE performance over the rows whose opponent has an Elo (tagged or filled); NaN with
    fewer than ``min_games`` such rows."""
    rated = [r for r in rows if _opponent_rating(r) is not None]
    fig = performance_figure(
        [int(_opponent_rating(r)) for r in rated],
        sum(r["score"] for r in rated),
        sum(1 for r in rated if r.get("opponent_filled")),
        min_games,
    )
    return math.nan if fig.value is None else float(fig.value)


def rated_counts(rows: Sequence[Row]) -> tuple[int, int]:
    """Games against an opponent with an Elo, and of those the Elos filled."""
    rated = [r for r in rows if _opponent_rating(r) is not None]
    return len(rated), sum(1 for r in rated if r.get("opponent_filled"))


def _mean(values: Sequence[float]) -> float:
    return sum(values) / len(values) if values else math.nan


#: The columns of a row :func:`style_summary` reads.
STYLE_COLUMNS = (
    "score",
    "draw",
    "opponent_elo",
    "opponent_rating",
    "opponent_filled",
    "sdf_factor",
    "short_draw",
    "sacrifice",
    "endgame",
    "opening_draw",
)


def opening_draw_factor(draws: Sequence[float]) -> float:
    """The mean draw percentage of the openings of some games (NaN without any)."""
    return _mean(draws)


def style_summary(
    g: Sequence[Row], min_rated: int = 1, opening_draw: tuple[float, int] | None = None
) -> dict[str, Any]:
    """Games, score, draws, SDF, sacrifice, opening draw and endgame figures of some rows;
    performances need ``min_rated`` games against a rated opponent (else NaN). The opening
    draw factor and its games come from the rows' ``opening_draw``, or are ``opening_draw``."""
    n = len(g)
    factors = [r["sdf_factor"] for r in g if r["draw"]]
    sdf = style.player_sdf(factors, n)
    if opening_draw is None:
        eco = [r["opening_draw"] for r in g if not math.isnan(r["opening_draw"])]
        opening_draw = opening_draw_factor(eco), len(eco)
    end = [r for r in g if r["endgame"]]
    opp = [float(_opponent_rating(r)) for r in g if _opponent_rating(r) is not None]
    rated, filled = rated_counts(g)
    end_rated, end_filled = rated_counts(end)
    return {
        "games": n,
        "points": float(sum(r["score"] for r in g)),
        "score_pct": 100.0 * _mean([r["score"] for r in g]),
        "mean_opponent_elo": _mean(opp),
        "performance": performance_of(g, min_rated),
        "performance_games": rated,
        "performance_filled": filled,
        "draws": len(factors),
        "short_draws": sum(1 for r in g if r["short_draw"]),
        "sdf": sdf if sdf is not None else math.nan,
        "sacrifice_wins": sum(1 for r in g if r["sacrifice"]),
        "sacrifice_pct": 100.0 * _mean([1.0 if r["sacrifice"] else 0.0 for r in g]),
        "opening_draw_factor": opening_draw[0],
        "eco_games": opening_draw[1],
        "endgame_games": len(end),
        "endgame_points": float(sum(r["score"] for r in end)),
        "endgame_rated": end_rated,
        "endgame_filled": end_filled,
        "endgame_performance": performance_of(end, min_rated),
    }


def evaluate_scope(
    rows: pd.DataFrame | Sequence[Row],
    scope: Scope,
    ratings: Mapping[str, float],
    notes: Mapping[str, str] | None = None,
    min_rated: int = 1,
) -> pd.DataFrame:
    """Every player with a game in the scope: statistics over the counted games and status;
    performances need ``min_rated`` games against a rated opponent.

    ``status`` is "" when listed, else every unmet threshold with numbers ("n/a: …").
    Sorted listed first, then by rating (highest first) and name.
    """
    notes = notes or {}
    recs = row_records(rows) if isinstance(rows, pd.DataFrame) else rows
    mine: dict[str, list[Row]] = {}
    for r in recs:
        if in_scope(r, scope):
            mine.setdefault(r["player"], []).append(r)
    out = []
    for player in sorted(mine):
        all_rows = mine[player]
        g = [r for r in all_rows if counts(r, scope.opponent_min_elo)]
        last_year = max(int(r["year"]) for r in all_rows)
        n = len(g)
        rating = ratings.get(player)
        reasons = []
        if scope.min_rating > 0:
            if rating is None:
                reasons.append("no rating")
            elif rating < scope.min_rating:
                reasons.append(f"{scope.rating_label} {rating:.0f} is below {scope.min_rating}")
        need = scope.needs(last_year)
        if n < need:
            against = (
                f" against opponents with an Elo tag of {scope.opponent_min_elo}+"
                if scope.opponent_min_elo > 0
                else ""
            )
            reasons.append(
                f"{n} {scope.time_class} game{'s' if n != 1 else ''}{against} "
                f"in {scope.period}; the list needs {need}"
            )
        out.append(
            {
                "player": player,
                "rating": rating if rating is not None else math.nan,
                "rating_note": notes.get(player, ""),
                **style_summary(g, min_rated),
                "all_games": len(all_rows),
                "last_year": last_year,
                "status": ("n/a: " + "; ".join(reasons)) if reasons else "",
            }
        )
    frame = pd.DataFrame(out, columns=LIST_COLUMNS)
    frame["_listed"] = frame["status"] != ""
    frame["_rating"] = -frame["rating"].fillna(-1e9)
    frame = frame.sort_values(["_listed", "_rating", "player"], kind="stable")
    return frame.drop(columns=["_listed", "_rating"]).reset_index(drop=True)


def listed(frame: pd.DataFrame) -> pd.DataFrame:
    return frame[frame["status"] == ""].reset_index(drop=True)


def fighter_order(frame: pd.DataFrame) -> pd.DataFrame:
    """Listed players by SDF ascending (fewest short draws first), then by name."""
    out = listed(frame)
    return out.sort_values(["sdf", "player"], kind="stable").reset_index(drop=True)


def month_text(months: float) -> str:
    m = math.floor(months)
    return f"{m // 12:04d}-{m % 12 + 1:02d}"


def standard_scopes(
    cfg: ResultsSection, as_of_months: float | None, years: Sequence[int]
) -> dict[str, Scope]:
    """Scopes of the classical lists: current, fighter, historic, early and one per year."""
    scopes: dict[str, Scope] = {}
    if as_of_months is not None:
        after = as_of_months - cfg.current_months
        period = (
            f"the {cfg.current_months} months {month_text(after + 1)} – {month_text(as_of_months)}"
        )
        scopes["current"] = Scope(
            "current",
            "Current list",
            "classical",
            after,
            as_of_months,
            period,
            cfg.current_min_elo,
            cfg.current_opponent_min_elo,
            cfg.min_games,
        )
        scopes["fighter"] = Scope(
            "fighter",
            "Fighter list",
            "classical",
            after,
            as_of_months,
            period,
            cfg.fighter_min_elo,
            cfg.current_opponent_min_elo,
            cfg.min_games,
        )
    since = cfg.historic_since * 12 - 1.0  # months > this: from January of historic_since
    scopes["historic"] = Scope(
        "historic",
        f"Historic list since {cfg.historic_since}",
        "classical",
        since,
        None,
        f"{cfg.historic_since} and later",
        cfg.historic_min_elo,
        cfg.historic_opponent_min_elo,
        cfg.min_games,
        rating_label="peak year-end improved Elo",
    )
    scopes["early"] = Scope(
        "early",
        f"Historic list before {cfg.historic_since}",
        "classical",
        None,
        since,
        f"the years before {cfg.historic_since}",
        cfg.early_min_elo,
        cfg.early_opponent_min_elo,
        cfg.min_games,
        early_until=cfg.historic_early_until,
        early_min_games=cfg.historic_early_min_games,
        rating_label="peak year-end improved Elo",
    )
    current_year = None if as_of_months is None else int(as_of_months // 12)
    for y in years:
        # Before the first FIDE list the games carry no Elo tags: the early thresholds apply.
        early = y < cfg.historic_since
        scopes[f"year-{y}"] = Scope(
            f"year-{y}",
            f"{y}",
            "classical",
            y * 12 - 1.0,
            y * 12 + 11.0,
            f"{y}",
            cfg.early_min_elo if early else cfg.current_min_elo,
            cfg.early_opponent_min_elo if early else cfg.current_opponent_min_elo,
            cfg.annual_min_games_current_year if y == current_year else cfg.annual_min_games,
            rating_label="year-end improved Elo",
        )
    return scopes


def fast_scopes(
    cfg: ResultsSection, time_class: str, as_of_months: float | None, years: Sequence[int]
) -> dict[str, Scope]:
    """Rapid or blitz: the overall list since ``rapid_since``/``blitz_since`` and annual lists
    (rapid only: Fischl gives no annual minimum for blitz)."""
    rapid = time_class == "rapid"
    since_year = cfg.rapid_since if rapid else cfg.blitz_since
    since = since_year * 12 - 1.0
    label = f"{time_class} rating"
    scopes = {
        time_class: Scope(
            time_class,
            f"{time_class.capitalize()} list",
            time_class,
            since,
            as_of_months,
            f"{since_year} and later",
            cfg.rapid_min_elo,
            cfg.current_opponent_min_elo,
            cfg.rapid_min_games if rapid else cfg.blitz_min_games,
            rating_label=label,
        )
    }
    if rapid:
        for y in years:
            if y < since_year:
                continue
            scopes[f"{time_class}-{y}"] = Scope(
                f"{time_class}-{y}",
                f"{y}",
                time_class,
                y * 12 - 1.0,
                y * 12 + 11.0,
                f"{y}",
                cfg.rapid_min_elo,
                cfg.current_opponent_min_elo,
                cfg.rapid_annual_min_games,
                rating_label=f"year-end {label}",
            )
    return scopes


def peak_ratings(
    year_end: pd.DataFrame, first_year: int | None, last_year: int | None
) -> tuple[dict[str, float], dict[str, str]]:
    """Each player's highest year-end rating in [first_year, last_year], and its year
    (the earliest year on a tie)."""
    best: dict[str, tuple[float, int]] = {}
    for name, year, rating in zip(
        year_end["player"], year_end["year"], year_end["rating"], strict=True
    ):
        y = int(year)
        if (first_year is not None and y < first_year) or (last_year is not None and y > last_year):
            continue
        have = best.get(str(name))
        if have is None or (float(rating), -y) > (have[0], -have[1]):
            best[str(name)] = (float(rating), y)
    ratings = {p: r for p, (r, _) in sorted(best.items())}
    notes = {p: f"peak at the end of {y}" for p, (_, y) in sorted(best.items())}
    return ratings, notes


def year_ratings(year_end: pd.DataFrame, year: int) -> dict[str, float]:
    sel = year_end[year_end["year"] == year]
    return {str(p): float(r) for p, r in zip(sel["player"], sel["rating"], strict=True)}


def correlation(x: Sequence[float], y: Sequence[float]) -> tuple[int, float, float] | None:
    """(n, Pearson, Spearman) over pairs where both are known; None with fewer than 3."""
    from scipy import stats

    a = np.asarray(x, dtype=float)
    b = np.asarray(y, dtype=float)
    ok = ~(np.isnan(a) | np.isnan(b))
    a, b = a[ok], b[ok]
    if len(a) < 3 or np.ptp(a) == 0 or np.ptp(b) == 0:
        return None
    return (
        len(a),
        float(stats.pearsonr(a, b).statistic),
        float(stats.spearmanr(a, b).statistic),
    )
