"""The move table every move-quality method starts from (METHODS.md section 0).

One row per analysed move: the position's best score ``e_best``, the played move's score
``e_played`` (both centipawns from the mover's point of view, mates converted to
±(mate_cp − distance)), and the error ``delta = e_best − e_played`` clipped at 0.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from itertools import chain
from typing import Any

import numpy as np
import pandas as pd

from site_builder.analysis.positions import Ply
from site_builder.model import GameRecord

COLUMNS = [
    "game_id",
    "ply",
    "move_number",
    "white",
    "player",
    "opponent",
    "player_elo",
    "opponent_elo",
    "year",
    "months",
    "time_class",
    "position",
    "played",
    "best",
    "e_best",
    "e_played",
    "delta",
    "raw_delta",
    "is_best",
    "forced",
    "repetition",
    "legal",
    "line_scores",
    "line_moves",
    "depth_scores",
    "played_rank",
    "nodes",
    "best_san",
]


def to_cp(cp: int | None, mate: int | None, mate_cp: int) -> int:
    """Centipawns, with mate in n as ±(mate_cp − n) (METHODS.md section 0)."""
    if mate is None:
        assert cp is not None
        return int(cp)
    if mate > 0:
        return mate_cp - mate
    return -mate_cp - mate  # mate < 0: being mated in |mate|; mate == 0 cannot be a line


def move_row(
    game: GameRecord,
    ply: Ply,
    lines_value: Mapping[str, Any],
    move_value: Mapping[str, Any] | None,
    mate_cp: int,
) -> dict[str, Any]:
    lines = lines_value["lines"]
    scores = [to_cp(cp, mate, mate_cp) for _uci, cp, mate in lines]
    moves = [uci for uci, _cp, _mate in lines]
    e_best = scores[0]
    if ply.played in moves:
        rank = moves.index(ply.played) + 1
        e_played = scores[rank - 1]
    else:
        if move_value is None:
            raise KeyError(f"played move {ply.played} of {ply.position} is not analysed")
        rank = 0  # outside the principal lines
        e_played = to_cp(move_value["cp"], move_value["mate"], mate_cp)
    raw = e_best - e_played
    player, opponent = (game.white, game.black) if ply.white else (game.black, game.white)
    player_elo, opponent_elo = (
        (game.white_elo, game.black_elo) if ply.white else (game.black_elo, game.white_elo)
    )
    return {
        "game_id": game.game_id,
        "ply": ply.ply,
        "move_number": ply.move_number,
        "white": ply.white,
        "player": player,
        "opponent": opponent,
        "player_elo": player_elo,
        "opponent_elo": opponent_elo,
        "year": game.date.year,
        "months": game.date.months,
        "time_class": game.time_class,
        "position": ply.position,
        "played": ply.played,
        "best": moves[0],
        "e_best": e_best,
        "e_played": e_played,
        "delta": max(0, raw),
        "raw_delta": raw,
        "is_best": ply.played == moves[0],
        "forced": ply.forced,
        "repetition": ply.repetition,
        "legal": ply.legal,
        "line_scores": scores,
        "line_moves": moves,
        "depth_scores": [to_cp(cp, mate, mate_cp) for _d, cp, mate, _m in lines_value["by_depth"]],
        "played_rank": rank,
        "nodes": int(lines_value.get("nodes", 0)),
    }


def move_table(rows: Sequence[dict[str, Any]]) -> pd.DataFrame:
    frame = pd.DataFrame(list(rows), columns=COLUMNS)
    if frame.empty:
        return frame
    frame["player_elo"] = frame["player_elo"].astype("Int64")
    frame["opponent_elo"] = frame["opponent_elo"].astype("Int64")
    frame["year"] = frame["year"].astype("Int64")
    return frame.sort_values(["game_id", "ply"], kind="stable").reset_index(drop=True)


def candidate_scores(turns: pd.DataFrame, lines: int) -> tuple[np.ndarray, np.ndarray]:
    """Per turn, the scores in pawns of the top ``lines`` engine lines, with the played move's
    score appended when it is outside them (a row per turn, NaN after its last candidate,
    as wide as the longest row), and the played move's index in that row."""
    line_scores = turns["line_scores"].tolist()
    n = len(line_scores)
    count = np.fromiter(map(len, line_scores), dtype=np.int64, count=n)
    flat = np.fromiter(chain.from_iterable(line_scores), dtype=float, count=int(count.sum()))
    start = np.cumsum(count) - count
    shown = np.minimum(count, lines)  # the listed lines of each turn
    rank = turns["played_rank"].to_numpy(dtype=np.int64)
    inside = (rank >= 1) & (rank <= shown)
    played = np.where(inside, rank - 1, shown)
    width = int((shown + ~inside).max()) if n else 1
    scores = np.full((n, max(width, lines)), np.nan)
    for j in range(lines):
        has = shown > j
        scores[has, j] = flat[start[has] + j] / 100.0
    outside = np.flatnonzero(~inside)
    scores[outside, shown[outside]] = turns["e_played"].to_numpy(dtype=float)[outside] / 100.0
    return scores[:, :width], played
