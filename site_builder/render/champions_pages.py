"""Champion comparisons (Alliot 2017), the pages: conformance, the game, gain and Markov
predictors, head-to-head tables, the world-championship check and the complexity indicators,
made from the result computed in ``site_builder/families/conformance.py``."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np

from site_builder.families import conformance
from site_builder.families.conformance import (
    COMPLEXITY_CLIP_CP,
    PREDICTOR_NAMES,
    PREDICTORS,
    ConformanceResult,
)
from site_builder.frames import memo_on, records
from site_builder.metrics import complexity, markov
from site_builder.metrics.conformance import KIND_NAMES, KINDS, N_BINS, SEED_K, X_GRID
from site_builder.model import event_title
from site_builder.render import charts, paging
from site_builder.render.tables import Column, Downloads, download_pages, downloads_of
from site_builder.render.writer import Page, pct
from site_builder.sitedata import Family, NavItem, Section, SiteData

# --- pages --------------------------------------------------------------------------------


def _seed_overlap(wcc: list[dict[str, Any]]) -> dict[str, Any]:
    """The content's matches that are also in the seed's Table 5: their noise floor and the
    seed's own errors on them, so the seed's figures can be weighed against the noise."""
    rows = [r for r in wcc if r["seed"] is not None and r["noise"] is not None]
    out: dict[str, Any] = {"matches": [r["match"] for r in rows], "count": len(rows)}
    out["noise"] = float(np.mean([r["noise"] for r in rows])) if rows else None
    for p in PREDICTORS:
        errs = [
            abs(r["seed"][p] - r["seed"]["actual"]) / 100 for r in rows if r["seed"][p] is not None
        ]
        out[p] = float(np.mean(errs)) if errs else None
        out[f"{p}_count"] = len(errs)
    return out


_SYMBOLS = ["circle", "square", "diamond", "triangle-up", "cross", "x", "star", "hexagon"]
_DASHES = ["solid", "dash", "dot", "dashdot"]
#: Many series: the legend goes to the right, where it does not cover the axis title.
_SIDE_LEGEND: dict[str, Any] = {
    "legend": {"orientation": "v", "x": 1.02, "xanchor": "left", "y": 1},
    "height": 560,
    "margin": {"l": 60, "r": 20, "t": 50, "b": 50},
}


def _style(i: int) -> dict[str, Any]:
    """Distinct colour, marker and dash for the i-th series (Okabe–Ito colours)."""
    n = len(charts.PALETTE)
    return {
        "line": {"color": charts.PALETTE[i % n], "dash": _DASHES[(i // n) % len(_DASHES)]},
        "marker": {"symbol": _SYMBOLS[(i // n) % len(_SYMBOLS)], "size": 7},
    }


def _strength_rows(site: SiteData, res: ConformanceResult) -> list[dict[str, Any]]:
    return [{**r, "href": site.player_path(r["player"])} for r in records(res.strength)]


def _strength_chart(
    rows: list[dict[str, Any]], field: str, title: str, y_title: str, champions_first: bool = True
) -> dict[str, Any] | None:
    listed = [r for r in rows if not r["status"]]
    if not listed:
        return None
    players = sorted({r["player"] for r in listed})
    data = []
    for i, p in enumerate(players):
        mine = sorted((r for r in listed if r["player"] == p), key=lambda r: r["year"])
        data.append(
            {
                "type": "scatter",
                "mode": "lines+markers",
                "name": p,
                "x": [r["year"] for r in mine],
                "y": [100 * r[field] for r in mine],
                "hovertemplate": "%{fullData.name}<br>%{x}: %{y:.1f}%<extra></extra>",
                **_style(i),
            }
        )
    return charts.figure(data, charts.layout(title, "year", y_title, **_SIDE_LEGEND))


def _rho_chart(res: ConformanceResult) -> dict[str, Any] | None:
    if not res.curves or all(c.games < 3 for c in res.curves):
        return None
    data = [
        {
            "type": "scatter",
            "mode": "lines+markers",
            "name": c.label,
            "x": X_GRID.tolist(),
            "y": c.rho,
            "hovertemplate": "x = %{x:.1f} pawn: ρ = %{y:.3f}<extra>" + c.label + "</extra>",
            **_style(i),
        }
        for i, c in enumerate(res.curves)
    ]
    return charts.figure(
        data,
        charts.layout(
            f"Pearson ρ of p(x) = p_w(x) − p_b(x) with the result ({res.curves[0].games} games)",
            "x: conformance bound (pawns)",
            "Pearson ρ with the result (+1/0/−1)",
        ),
    )


def _ab_chart(res: ConformanceResult, field: str, title: str, y_title: str) -> dict[str, Any]:
    data = [
        {
            "type": "scatter",
            "mode": "lines+markers",
            "name": c.label,
            "x": X_GRID.tolist(),
            "y": getattr(c, field),
            **_style(i),
        }
        for i, c in enumerate(res.curves)
    ]
    return charts.figure(data, charts.layout(title, "x: conformance bound (pawns)", y_title))


def _curve_rows(res: ConformanceResult) -> list[dict[str, Any]]:
    rows = []
    xp = round(res.cfg.predictor_x * 10)
    for c in res.curves:
        rho = np.array(c.rho, dtype=float)
        best = int(np.nanargmax(rho)) if np.isfinite(rho).any() else None
        rows.append(
            {
                "conformance": c.label,
                "games": c.games,
                "best_x": float(X_GRID[best]) if best is not None else None,
                "best_rho": float(rho[best]) if best is not None else None,
                "best_alpha": c.alpha[best] if best is not None else None,
                "best_beta": c.beta[best] if best is not None else None,
                "x": float(X_GRID[xp]),
                "rho": c.rho[xp],
                "alpha": c.alpha[xp],
                "beta": c.beta[xp],
            }
        )
    return rows


def _heatmap(
    labels: list[str], z: np.ndarray, title: str, x_title: str, y_title: str, text: bool = True
) -> dict[str, Any]:
    zz = [[None if math.isnan(v) else round(100 * float(v)) for v in row] for row in z]
    spread = max([abs(v - 50) for row in zz for v in row if v is not None] or [0])
    half = max(10, 5 * math.ceil(spread / 5))  # colours span 50 ± half, in steps of 5
    trace: dict[str, Any] = {
        "type": "heatmap",
        "x": labels,
        "y": labels,
        "z": zz,
        "zmin": 50 - half,
        "zmax": 50 + half,
        "colorscale": "Cividis",
        "colorbar": {"title": {"text": "score %"}},
        "hovertemplate": "%{y} against %{x}: %{z}%<extra></extra>",
    }
    if text:
        trace["text"] = [["" if v is None else str(v) for v in row] for row in zz]
        trace["texttemplate"] = "%{text}"
    return charts.figure(
        [trace],
        charts.layout(
            title,
            x_title,
            y_title,
            yaxis={"title": {"text": y_title}, "autorange": "reversed", "automargin": True},
            height=max(400, 28 * len(labels) + 200),
        ),
    )


def _key_label(key: tuple[str, int]) -> str:
    return f"{key[0]} {key[1]}"


def _pair_rows(res: ConformanceResult) -> Iterator[dict[str, Any]]:
    """Every ordered pair of compared player-years, one row at a time (89,700 rows for the
    default 300 player-years: made only while the downloads are written)."""
    h = res.h2h
    for i, a in enumerate(h.keys):
        for j, b in enumerate(h.keys):
            if i == j:
                continue
            yield (
                {
                    "player_a": a[0],
                    "year_a": a[1],
                    "player_b": b[0],
                    "year_b": b[1],
                    "markov": _share(h.markov[i, j]),
                    "markov_a_white": _share(h.markov_white[i, j]),
                    "markov_a_black": _share(1 - h.markov_white[j, i]),
                    "markov_win": _share(h.win[i, j]),
                    "markov_draw": _share(1 - h.win[i, j] - h.loss[i, j]),
                    "markov_loss": _share(h.loss[i, j]),
                    "markov_note": h.markov_note(i, j),
                    "gain": float(h.gain[i, j]),
                    "conformance": None
                    if math.isnan(h.conformance[i, j])
                    else float(h.conformance[i, j]),
                }
            )


def _share(v: float) -> float | None:
    """A score share, None where it is n/a (NaN)."""
    return None if math.isnan(v) else float(v)


# The documented columns of every download (the legends beside the tables).
_SCORE = "score share 0–1 of the first-named player"
PAIR_COLUMNS = (
    Column("player_a", "Player A", "the first player"),
    Column("year_a", "Year A", "the year of A's games the prediction uses", True),
    Column("player_b", "Player B", "the opponent"),
    Column("year_b", "Year B", "the year of B's games", True),
    Column("markov", "Markov", "A's predicted score (0–1), averaged over colours", True),
    Column("markov_a_white", "Markov, A White", "A's predicted score with White", True),
    Column("markov_a_black", "Markov, A Black", "A's predicted score with Black", True),
    Column("markov_win", "Win", "Markov probability that A wins (averaged over colours)", True),
    Column("markov_draw", "Draw", "Markov probability of a draw", True),
    Column("markov_loss", "Loss", "Markov probability that A loses", True),
    Column("markov_note", "Markov note", "why the Markov columns are empty (no unique π)"),
    Column("gain", "Gain", "A's score predicted by the gain distribution (0–1)", True),
    Column("conformance", "Conformance", "A's score by the conformance predictor (0–1)", True),
)
DISTRIBUTION_COLUMNS = (
    Column("player", "Player", "the player"),
    Column("year", "Year", "the calendar year", True),
    Column("conformance", "Conformance", "raw, Guid–Bratko (gb) or ponderated"),
    Column("bin", "Bin", "0 = exactly 0; b = ((b−1)/10, b/10] pawns; the last bin: above", True),
    Column("upper_pawns", "Upper bound", "the bin's upper bound in pawns (empty: the last)", True),
    Column("moves", "Moves", "counted moves in the bin, that year alone", True),
    Column("R", "R", "share of the year's moves in the bin", True),
    Column("R_cum", "R′", "share of the year's moves with conformance ≤ the upper bound", True),
    Column("Q", "Q", "R′ with the forgetting factor (earlier years halved per year back)", True),
)
_YEAR_SHARES = (
    Column("moves", "Moves", "counted moves of the year (from the first counted move on)", True),
    Column("q0", "Q(0)", "share of moves with conformance exactly 0, forgetting factor 2", True),
    Column("q03", "Q(≤ 0.3)", "share within 0.3 pawn, forgetting factor 2", True),
    Column("r0", "R′(0)", "share of moves with conformance exactly 0, that year alone", True),
    Column("r03", "R′(≤ 0.3)", "share within 0.3 pawn, that year alone", True),
    Column(
        "q_predictor",
        "Q of the predictor",
        "Q at the conformance predictor's x, of its conformance kind",
        True,
    ),
    Column("status", "Status", "empty when compared, else why not (too few moves)"),
)
STRENGTH_COLUMNS = (
    Column("player", "Player", "name as in the games (after the alias table)"),
    Column("year", "Year", "calendar year", True),
    *_YEAR_SHARES,
)
PLAYER_YEAR_COLUMNS = (Column("year", "Year", "calendar year", True), *_YEAR_SHARES)
_WINS = Column("wins", "Predicted wins", "opponent-years against which the Markov score > ½", True)
_OPPONENTS = Column(
    "opponents", "Opponent-years", "every year of every other player with a Markov score", True
)
_NO_SCORE = Column(
    "no_score", "Without a score", "opponent-years whose chain has no unique π (n/a)", True
)
_MEAN_SCORE = Column("mean_score", "Mean score", "mean Markov score (0–1) against them", True)
BEST_COLUMNS = (
    Column("player", "Player", "name as in the games (after the alias table)"),
    Column("year", "Year", "calendar year with enough counted moves", True),
    _OPPONENTS,
    _WINS,
    _MEAN_SCORE,
    _NO_SCORE,
    Column("best", "Best year", "True for the player's best year"),
)
BEST_YEAR_COLUMNS = (
    Column("player", "Player", "name as in the games (after the alias table)"),
    Column("year", "Best year", "the year with the most predicted wins", True),
    _WINS,
    _OPPONENTS,
    _MEAN_SCORE,
)
WCC_COLUMNS = (
    Column("match", "Match", "event and players, the player who scored more first"),
    Column("year", "Year", "year of the match's first game", True),
    Column("player_a", "Player A", "the first-named player (who scored more)"),
    Column("player_b", "Player B", "the opponent"),
    Column("games", "Games", "games scored (forfeits left out)", True),
    Column("forfeits", "Forfeits", "games left out as forfeits", True),
    Column("points_a", "Points A", "A's points in the scored games", True),
    Column("draws", "Draws", "drawn games among the scored ones", True),
    Column("actual", "Actual", f"actual {_SCORE}", True),
    Column(
        "noise",
        "Noise floor",
        "expected absolute error of a perfect predictor over this many games (0–1)",
        True,
    ),
    Column("data_year", "Data year", "the year of the games the predictions use", True),
    Column("conformance", "ACS", f"conformance predictor's {_SCORE}", True),
    Column("gain", "COVS", f"gain-distribution predictor's {_SCORE}", True),
    Column("markov", "MS", f"Markov predictor's {_SCORE}", True),
    Column("markov_win", "Markov win", "Markov probability that A wins a game", True),
    Column("markov_draw", "Markov draw", "Markov probability of a drawn game", True),
    Column("markov_loss", "Markov loss", "Markov probability that A loses a game", True),
    Column("elo", "ELOS", f"Elo expectation, {_SCORE}", True),
    Column("conformance_note", "ACS note", "why the conformance prediction is n/a, if it is"),
    Column("gain_note", "COVS note", "why the gain prediction is n/a, if it is"),
    Column("markov_note", "MS note", "why the Markov prediction is n/a, if it is"),
    Column("elo_note", "ELOS note", "where the Elo prediction's ratings come from, or why n/a"),
)
MAE_COLUMNS = (
    Column("predictor", "Predictor", "the predictor, or a reference row (baseline, noise floor)"),
    Column("matches", "Matches predicted", "title matches it predicted", True),
    Column("mae", "MAE", "mean absolute error of the score share (0–1) over them", True),
    Column("common_matches", "Matches with every predictor", "matches all predicted", True),
    Column("mae_common", "MAE there", "mean absolute error over those matches", True),
    Column("baseline_there", "50% there", "the 50% baseline's MAE on its matches", True),
    Column("noise_there", "Noise floor there", "the noise floor on its matches", True),
    Column("seed_mae", "Table 5: 17", "MAE in the seed's Table 5 (p. 26), 17 matches", True),
    Column(
        "seed_mae_elo", "Table 5: 11 with Elo", "MAE in Table 5 over the 11 rated matches", True
    ),
    Column("seed_text", "Seed's text", "the MAE the seed's text states (17 / 11) and where"),
)
CURVE_COLUMNS = (
    Column("conformance", "Conformance", "raw, Guid–Bratko or ponderated (with its constants)"),
    Column("games", "Games", "analysed classical games with a result counted", True),
    Column("best_x", "Best x", "the bound x (pawns) where ρ is highest", True),
    Column("best_rho", "ρ at best x", "Pearson's ρ of p(x) with the result there", True),
    Column("best_alpha", "α at best x", "intercept of r = β·p(x) + α there", True),
    Column("best_beta", "β at best x", "slope of r = β·p(x) + α there", True),
    Column("x", "x", "the bound the conformance predictor uses (pawns)", True),
    Column("rho", "ρ at x", "Pearson's ρ at that x", True),
    Column("alpha", "α at x", "intercept at that x", True),
    Column("beta", "β at x", "slope at that x", True),
)
COMPLEXITY_COLUMNS = (
    Column("player", "Player", "the player, or a group of players"),
    Column("kind", "Kind", "player, or group (title-match players, others, all)"),
    Column("moves", "Moves", "counted moves", True),
    Column("mean_delta", "Mean δ (pawns)", "mean raw conformance δ of the moves", True),
    Column("mean_stability", "Mean stability (cp)", "mean of the moves' stability", True),
    *(
        Column(k, f"ρ {complexity.INDICATOR_NAMES[k]}", f"Pearson's ρ of {name} with δ", True)
        for k, name in (
            ("stability", "the stability (mean |change| of the score between depths)"),
            ("jump_value", "the jump value (largest change)"),
            ("jump_depth", "the jump depth (depth of the largest change)"),
            ("jump_product", "jump depth × value"),
        )
    ),
    Column("status", "Status", "empty, or why the ρ's are n/a"),
)
assert tuple(c.key for c in COMPLEXITY_COLUMNS[5:-1]) == complexity.INDICATORS


def _player_year_base(site: SiteData, player: str) -> str:
    return f"data/players/{site.player_slugs[player]}-conformance-years"


def _distribution_rows(res: ConformanceResult) -> list[dict[str, Any]]:
    """R, R′ and Q per bin for every compared player-year and conformance (long format)."""
    rows = []
    for kind in KINDS:
        counts = res.counts[kind].to_numpy(dtype=float)
        q = res.q[kind].to_numpy(dtype=float)
        r_cum = res.r_cum[kind].to_numpy(dtype=float)
        where = {(str(p), int(y)): i for i, (p, y) in enumerate(res.counts[kind].index)}
        for key in res.models.eligible:
            if key not in where:
                continue
            i = where[key]
            total = counts[i].sum()
            for b in range(N_BINS):
                last = b == N_BINS - 1
                rows.append(
                    {
                        "player": key[0],
                        "year": key[1],
                        "conformance": kind,
                        "bin": b,
                        "upper_pawns": None if last else round(b / 10, 1),
                        "moves": int(counts[i, b]),
                        "R": float(counts[i, b] / total) if total else None,
                        "R_cum": None if last else float(r_cum[i, b]),
                        "Q": None if last else float(q[i, b]),
                    }
                )
    rows.sort(key=lambda r: (r["player"], r["year"], KINDS.index(r["conformance"]), r["bin"]))
    return rows


def _downloads(
    name: str,
    rows: list[dict[str, Any]] | Callable[[], Iterable[dict[str, Any]]],
    columns: tuple[Column, ...],
    made_from: Any = None,
) -> tuple[Downloads, list[Page]]:
    return download_pages(f"data/{name}", rows, columns, made_from)


def _wcc_chart(rows: list[dict[str, Any]]) -> dict[str, Any] | None:
    if not rows:
        return None
    labels = [r["match"] for r in rows]
    data: list[dict[str, Any]] = [
        {
            "type": "scatter",
            "mode": "markers",
            "name": "actual score",
            "x": labels,
            "y": [100 * r["actual"] if r["actual"] == r["actual"] else None for r in rows],
            "marker": {
                "color": charts.COLORS["black"],
                "size": 11,
                "symbol": "line-ew-open",
                "line": {"width": 3, "color": charts.COLORS["black"]},
            },
        }
    ]
    for i, p in enumerate(PREDICTORS):
        data.append(
            {
                "type": "scatter",
                "mode": "markers",
                "name": PREDICTOR_NAMES[p],
                "x": labels,
                "y": [None if r[p] is None else 100 * r[p] for r in rows],
                "marker": {"color": charts.PALETTE[i], "symbol": _SYMBOLS[i + 1], "size": 9},
            }
        )
    return charts.figure(
        data,
        charts.layout(
            "Title matches: actual score of the winner and each predictor's forecast",
            "match (winner first)",
            "score of the first-named player (%)",
            yaxis={"title": {"text": "score of the first-named player (%)"}, "range": [0, 100]},
        ),
    )


def pages(site: SiteData) -> list[Page]:
    res: ConformanceResult = site.state.results["conformance"]
    cfg = res.cfg
    out: list[Page] = []

    strength = _strength_rows(site, res)
    kind_name = KIND_NAMES[cfg.strength_kind]
    fig0 = _strength_chart(
        strength,
        "q0",
        f"Strength at 0 cp: share of moves with {kind_name} conformance 0 (forgetting factor 2)",
        "moves at 0 cp (%)",
    )
    fig3 = _strength_chart(
        strength,
        "q03",
        f"Strength at ≤ 0.3 pawn: share of moves with {kind_name} "
        "conformance ≤ 0.3 (forgetting factor 2)",
        "moves within 0.3 pawn (%)",
    )
    listed = [r for r in strength if not r["status"]]
    others = [r for r in strength if r["status"]]
    years_dl, years_files = _downloads("conformance-years", strength, STRENGTH_COLUMNS)
    dist_dl, dist_files = _downloads(
        "conformance-distributions",
        lambda: _distribution_rows(res),
        DISTRIBUTION_COLUMNS,
        made_from=(res.counts, res.q, res.r_cum, res.models.eligible),
    )
    out.append(
        Page(
            "champions.html",
            "champions.html",
            {
                "title": "Champion comparisons",
                "cfg": cfg,
                "kind_name": kind_name,
                "rows": listed,
                "others": others,
                "listed": len(listed),
                "players": len({r["player"] for r in listed}),
                "fig0": fig0,
                "fig3": fig3,
                "matches": len(res.titles.matches),
                "downloads": years_dl,
                "distributions": dist_dl,
            },
        )
    )
    out += years_files + dist_files

    curve_rows = _curve_rows(res)
    curves_dl, curves_files = _downloads("conformance-predictor", curve_rows, CURVE_COLUMNS)
    out.append(
        Page(
            "predictors.html",
            "predictors.html",
            {
                "title": "Game predictor p(x)",
                "cfg": cfg,
                "rho_chart": _rho_chart(res),
                "alpha_chart": _ab_chart(
                    res, "alpha", "α of r = β·p(x) + α, by x", "α (result units, −1…+1)"
                )
                if res.curves and res.curves[0].games >= 3
                else None,
                "beta_chart": _ab_chart(
                    res, "beta", "β of r = β·p(x) + α, by x", "β (result units per unit of p)"
                )
                if res.curves and res.curves[0].games >= 3
                else None,
                "curves": curve_rows,
                "fit": res.fit,
                "fit_status": res.fit_status,
                "ponderation": res.ponderation,
                "seed_k": SEED_K,
                "games": res.curves[0].games if res.curves else 0,
                "downloads": curves_dl,
            },
        )
    )
    out += curves_files

    best_rows = [{**r, "href": site.player_path(r["player"])} for r in records(res.best)]
    best_only = sorted(
        (r for r in best_rows if r["best"]),
        key=lambda r: (-r["wins"], -np.nan_to_num(r["mean_score"]), r["player"]),
    )
    labels = [_key_label(k) for k in res.best_keys]
    heat = (
        _heatmap(
            labels,
            res.best_matrix,
            "Markov predicted score of each player's best year (row against column, "
            "averaged over colours)",
            "opponent (best year)",
            "player (best year)",
        )
        if len(labels) >= 2
        else None
    )
    h2h = res.h2h
    pairs_dl, pairs_files = _downloads(
        "headtohead-pairs", lambda: _pair_rows(res), PAIR_COLUMNS, made_from=h2h
    )
    n_keys = len(h2h.keys)
    off_diagonal = ~np.eye(n_keys, dtype=bool)
    best_dl, best_files = _downloads("headtohead-best", best_only, BEST_YEAR_COLUMNS)
    years_h2h_dl, years_h2h_files = _downloads("headtohead-years", best_rows, BEST_COLUMNS)
    out.append(
        Page(
            "headtohead.html",
            "headtohead.html",
            {
                "title": "Head-to-head predictions",
                "cfg": cfg,
                "heatmap": heat,
                "best": best_only,
                "years": best_rows,
                "entries": len(res.h2h.keys),
                "eligible": len(res.models.eligible),
                "pairs": n_keys * (n_keys - 1),
                "na_pairs": int(np.isnan(h2h.markov[off_diagonal]).sum()),
                "pairs_downloads": pairs_dl,
                "best_downloads": best_dl,
                "years_downloads": years_h2h_dl,
            },
        )
    )
    out += pairs_files + best_files + years_h2h_files

    wcc_rows = [
        {
            **r,
            "href_a": site.player_path(r["player_a"]),
            "href_b": site.player_path(r["player_b"]),
            "event_href": site.event_path(r["event_key"])
            if r["event_key"] in site.event_slugs
            else None,
        }
        for r in res.wcc
    ]
    wcc_dl, wcc_files = _downloads("wcc", wcc_rows, WCC_COLUMNS)
    mae_dl, mae_files = _downloads("wcc-mae", res.mae, MAE_COLUMNS)
    out.append(
        Page(
            "wcc.html",
            "wcc.html",
            {
                "title": "World-championship check",
                "cfg": cfg,
                "rows": wcc_rows,
                "mae": res.mae,
                "overlap": _seed_overlap(res.wcc),
                "analysis": site.settings.analysis,
                "wcc_chart": _wcc_chart(wcc_rows),
                "not_matches": [(event_title(e, y), why) for e, y, why in res.titles.not_matches],
                "predictors": PREDICTORS,
                "names": PREDICTOR_NAMES,
                "short": {"conformance": "ACS", "gain": "COVS", "markov": "MS", "elo": "ELOS"},
                "downloads": wcc_dl,
                "mae_downloads": mae_dl,
            },
        )
    )
    out += wcc_files + mae_files

    comp_rows = [
        {**r, "href": site.player_path(r["player"]) if r["kind"] == "player" else None}
        for r in records(res.complexity)
    ]
    comp_shown = [r for r in comp_rows if not r["status"] or r["kind"] == "group"]
    comp_thin = [r for r in comp_rows if r["status"] and r["kind"] == "player"]
    comp_dl, comp_files = _downloads("complexity", comp_rows, COMPLEXITY_COLUMNS)
    out.append(
        Page(
            "complexity.html",
            "complexity.html",
            {
                "title": "Complexity indicators",
                "cfg": cfg,
                "rows": comp_shown,
                "thin": comp_thin,
                "names": complexity.INDICATOR_NAMES,
                "indicators": complexity.INDICATORS,
                "clip": COMPLEXITY_CLIP_CP,
                "downloads": comp_dl,
            },
        )
    )
    out += comp_files
    return paging.paged_all(site, out, {"complexity.html": "rows"})


# --- player and event blocks -------------------------------------------------------------


def _curves_by_player(res: ConformanceResult, kind: str) -> dict[str, list[tuple[Any, Any, Any]]]:
    """player → (year, R′ row, Q row) of each of their years, in index order (grouped once)."""

    def group() -> dict[str, list[tuple[Any, Any, Any]]]:
        r, q = res.r_cum[kind], res.q[kind]
        q_rows = dict(zip(q.index, q.to_numpy(), strict=True))
        out: dict[str, list[tuple[Any, Any, Any]]] = {}
        for (player, year), row in zip(r.index, r.to_numpy(), strict=True):
            out.setdefault(str(player), []).append((year, row, q_rows[(player, year)]))
        return out

    found: dict[str, list[tuple[Any, Any, Any]]] = memo_on(res, f"curves|{kind}", group)
    return found


def _cumulative_chart(view: PlayerView) -> dict[str, Any] | None:
    player, kind, mine = view.player, view.cfg.strength_kind, view.curves
    if mine is None:
        return None
    data = []
    for i, (year, r_year, q_year) in enumerate(mine):
        style = _style(i)
        data.append(
            {
                "type": "scatter",
                "mode": "lines+markers",
                "name": f"{year}: R′ (this year)",
                "x": X_GRID.tolist(),
                "y": [100 * float(v) for v in r_year],
                **style,
            }
        )
        data.append(
            {
                "type": "scatter",
                "mode": "lines",
                "name": f"{year}: Q (forgetting factor)",
                "x": X_GRID.tolist(),
                "y": [100 * float(v) for v in q_year],
                "line": {**style["line"], "dash": "dot"},
            }
        )
    return charts.figure(
        data,
        charts.layout(
            f"{player}: cumulative distribution of {KIND_NAMES[kind]} conformance",
            "conformance δ (pawns)",
            "moves with conformance ≤ δ (%)",
            **_SIDE_LEGEND,
        ),
    )


def _matrix_chart(view: PlayerView) -> dict[str, Any] | None:
    player, cfg = view.player, view.cfg
    if not view.models:
        return None
    labels = markov.class_labels()
    traces, buttons = [], []
    views = [(k, "White") for k in view.models] + [(k, "Black") for k in view.models]
    views.sort(key=lambda v: (-v[0][1], v[1] != "White"))
    for i, (key, colour) in enumerate(views):
        m, obs, exits = view.models[key][colour]
        blended = obs < cfg.markov_min_row
        row_text = [
            f"{obs[r]:.1f} moves"
            + (" (blended with all players)" if blended[r] else "")
            + (
                f" (never left: {cfg.markov_exit_pseudo:g} pseudo-moves of all players)"
                if exits[r]
                else ""
            )
            for r in range(markov.N_CLASSES)
        ]
        traces.append(
            {
                "type": "heatmap",
                "x": labels,
                "y": labels,
                "z": [[round(100 * float(v), 2) for v in row] for row in m],
                "zmin": 0,
                "zmax": 100,
                "colorscale": "Cividis",
                "colorbar": {"title": {"text": "%"}},
                "customdata": [[row_text[r]] * markov.N_CLASSES for r in range(markov.N_CLASSES)],
                # cell labels only where there is something to read (1% and more)
                "text": [[f"{100 * v:.0f}" if v >= 0.005 else "" for v in row] for row in m],
                "texttemplate": "%{text}",
                "textfont": {"size": 9},
                "hovertemplate": "from %{y} to %{x} cp: %{z:.1f}%<br>row: %{customdata}"
                "<extra></extra>",
                "visible": i == 0,
                "name": f"{key[1]} {colour}",
            }
        )
        buttons.append(
            {
                "label": f"{key[1]} as {colour}",
                "method": "update",
                "args": [
                    {"visible": [j == i for j in range(len(views))]},
                    {
                        "title": {
                            "text": f"{player} {key[1]}, moves as {colour}: transition "
                            "probabilities"
                        }
                    },
                ],
            }
        )
    first = views[0]
    return charts.figure(
        traces,
        charts.layout(
            f"{player} {first[0][1]}, moves as {first[1]}: transition probabilities",
            "class after the move (cp, White's view)",
            "class before the move (cp, White's view)",
            yaxis={
                "title": {"text": "class before the move (cp, White's view)"},
                "autorange": "reversed",
                "automargin": True,
            },
            height=620,
            updatemenus=[
                {
                    "buttons": buttons,
                    "direction": "down",
                    "x": 0,
                    "y": 1.12,
                    "xanchor": "left",
                    "yanchor": "bottom",
                    "showactive": True,
                }
            ],
        ),
    )


@dataclass(frozen=True)
class PlayerView:
    """What the player block reads: the player's conformance rows by year, their best year,
    their eligible player-years' Markov matrices, the title matches they played, their
    curves R′ and Q by year, the settings and where the year table is downloaded."""

    player: str
    href: str
    strength: list[dict[str, Any]]
    best: list[dict[str, Any]]
    #: (player, year) → colour → (matrix, moves observed per row, rows never left)
    models: dict[tuple[str, int], dict[str, tuple[Any, Any, Any]]]
    matches: list[dict[str, Any]]
    #: (year, R′ row, Q row) of each year, or None
    curves: list[tuple[Any, Any, Any]] | None
    cfg: Any
    downloads_base: str


def player_view(site: SiteData, player: str) -> PlayerView | None:
    res: ConformanceResult = site.state.results["conformance"]
    strength = res.by_player("strength", player)
    if not strength:
        return None
    m = res.models
    return PlayerView(
        player,
        site.player_path(player),
        strength,
        res.by_player("best", player),
        {
            key: {
                "White": (m.white[key], m.white_rows[key], m.white_exits[key]),
                "Black": (m.black[key], m.black_rows[key], m.black_exits[key]),
            }
            for key in res.eligible_of(player)
        },
        _wcc_by_player(res).get(player, []),
        _curves_by_player(res, res.cfg.strength_kind).get(player),
        res.cfg,
        _player_year_base(site, player),
    )


def _wcc_by_player(res: ConformanceResult) -> dict[str, list[dict[str, Any]]]:
    """player → their title matches' rows, in ``res.wcc`` order (grouped once)."""

    def make() -> dict[str, list[dict[str, Any]]]:
        out: dict[str, list[dict[str, Any]]] = {}
        for r in res.wcc:
            for p in dict.fromkeys((r["player_a"], r["player_b"])):
                out.setdefault(p, []).append(r)
        return out

    found: dict[str, list[dict[str, Any]]] = memo_on(res, "wcc_by_player", make)
    return found


def player_files(view: PlayerView) -> list[Page]:
    """The player's conformance-by-year table (on the player page) as a download."""
    return download_pages(view.downloads_base, view.strength, PLAYER_YEAR_COLUMNS)[1]


def player_sections(view: PlayerView) -> list[Section]:
    rows = [{**r, "href": view.href} for r in view.strength]
    best = [r for r in view.best if r["best"]]
    blends = []
    labels = markov.class_labels()
    for key, colours in view.models.items():
        for colour in ("White", "Black"):
            _, obs, exits = colours[colour]
            blends.append(
                {
                    "year": key[1],
                    "colour": colour,
                    "blended": int((obs < view.cfg.markov_min_row).sum()),
                    "rows": len(obs),
                    "moves": float(obs.sum()),
                    "exits": [labels[i] for i in np.nonzero(exits)[0]],
                }
            )
    return [
        Section(
            "Conformance and Markov matrices (Alliot)",
            "partials/conformance_player.html",
            {
                "rows": rows,
                "cumulative": _cumulative_chart(view),
                "matrix": _matrix_chart(view),
                "best": best[0] if best else None,
                "blends": blends,
                "matches": view.matches,
                "cfg": view.cfg,
                "kind_name": KIND_NAMES[view.cfg.strength_kind],
                "downloads": downloads_of(view.downloads_base, PLAYER_YEAR_COLUMNS),
            },
        )
    ]


def event_sections(site: SiteData, key: str) -> list[Section]:
    """The title match's predictions as the event page shows them (percentages to 0.1%):
    the page's key holds the section, and the models move every figure's last digits with
    any game of the content."""
    res: ConformanceResult = site.state.results["conformance"]
    rows = [r for r in res.wcc if r["event_key"] == key]
    if not rows:
        return []
    row = rows[0]
    shown = {k: row[k] for k in ("player_a", "player_b", "data_year", "games", "forfeits")}
    predictions = [
        {
            "name": PREDICTOR_NAMES[p],
            "predicted": pct(row[p]),
            "error": pct(row[f"{p}_error"]),
            "note": row[f"{p}_note"],
        }
        for p in PREDICTORS
    ]
    return [
        Section(
            "World-championship check",
            "partials/conformance_event.html",
            {"row": {**shown, "actual": pct(row["actual"])}, "predictions": predictions},
        )
    ]


FAMILY = Family(
    name="conformance",
    compute=conformance.compute,
    pages=pages,
    nav=(NavItem("Champions", "champions.html"),),
    player_view=player_view,
    player_sections=player_sections,
    player_files=player_files,
    event_sections=event_sections,
    methodology="partials/conformance_methodology.html",
)
