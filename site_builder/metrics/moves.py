"""The move table every move-quality method starts from (METHODS.md section 0).

One row per analysed move: the position's best score ``e_best``, the played move's score
``e_played`` (both centipawns from the mover's point of view, mates converted to
±(mate_cp − distance)), and the error ``delta = e_best − e_played`` clipped at 0.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

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


def candidate_scores(turns: pd.DataFrame, lines: int) -> tuple[list[list[float]], list[int]]:
    """Per turn, the scores in pawns of the top ``lines`` engine lines, with the played move's
    score appended when it is outside them, and the played move's index in that list."""
    scores: list[list[float]] = []
    played: list[int] = []
    for line_scores, rank, e_played in zip(
        turns["line_scores"], turns["played_rank"], turns["e_played"], strict=True
    ):
        row = [v / 100.0 for v in list(line_scores)[:lines]]
        r = int(rank)
        if 1 <= r <= len(row):
            played.append(r - 1)
        else:
            played.append(len(row))
            row.append(float(e_played) / 100.0)
        scores.append(row)
    return scores, played
