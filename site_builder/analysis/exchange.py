"""Analysis export and import: share evaluations between machines and ship them with content.

Format (version 1): gzip-compressed JSON Lines, UTF-8.

* Line 1, the header::

    {"format": "site-builder-analysis", "version": 1,
     "spec": {"engine": "Stockfish 15.1", "depth": 10, "nodes": 0, "multipv": 10,
              "hash_mb": 16, "threads": 1, "schema": 1},
     "entries": 12345}

* Then one entry per line, sorted by position then move:

  - principal lines of a position: ``{"p": POSITION, "v": VALUE}`` where POSITION is the
    EPD plus halfmove clock and VALUE holds ``depth``, ``seldepth``, ``nodes``, ``time``,
    ``lines`` (``[uci, cp, mate]`` per line, best first, scores from the side to move) and
    ``by_depth`` (``[depth, cp, mate, best uci]``);
  - a played move searched alone: ``{"p": POSITION, "m": UCI, "v": VALUE}`` with VALUE
    holding ``move``, ``cp``, ``mate``, ``depth``, ``nodes``, ``time``.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import json
from collections.abc import Iterator
from dataclasses import asdict
from pathlib import Path
from typing import Any

import chess
import chess.engine
import chess.pgn

from site_builder.analysis.cache import EvalCache
from site_builder.analysis.spec import SCHEMA, AnalysisSpec, move_key, position_key, pv_key
from site_builder.errors import SiteBuilderError

FORMAT = "site-builder-analysis"
VERSION = 1


class ExchangeError(SiteBuilderError):
    """An analysis file that cannot be read."""


def _spec_dict(spec: AnalysisSpec) -> dict[str, Any]:
    return {**asdict(spec), "schema": SCHEMA}


def spec_from_dict(data: dict[str, Any]) -> AnalysisSpec:
    fields = ("engine", "depth", "nodes", "multipv", "hash_mb", "threads")
    try:
        return AnalysisSpec(**{k: data[k] for k in fields})
    except (KeyError, TypeError) as exc:
        raise ExchangeError(f"analysis header lacks setting {exc}") from exc


def iter_entries(cache: EvalCache, spec: AnalysisSpec) -> Iterator[tuple[str, str | None, Any]]:
    """(position, move or None, value) for every cache entry made with ``spec``, sorted."""
    pv_prefix = f"pv|{spec.key}|"
    mv_prefix = f"mv|{spec.key}|"
    found: list[tuple[str, str, str | None]] = []
    for key in cache:
        if key.startswith(pv_prefix):
            found.append((key, key[len(pv_prefix) :], None))
        elif key.startswith(mv_prefix):
            position, move = key[len(mv_prefix) :].rsplit("|", 1)
            found.append((key, position, move))
    found.sort(key=lambda item: (item[1], item[2] or ""))
    for key, position, uci in found:
        yield position, uci, cache.get(key)


def export_analysis(
    cache: EvalCache, spec: AnalysisSpec, path: Path, positions: set[str] | None = None
) -> int:
    """Write the entries made with ``spec`` (only ``positions`` when given). Returns count."""
    entries = [e for e in iter_entries(cache, spec) if positions is None or e[0] in positions]
    header = {
        "format": FORMAT,
        "version": VERSION,
        "spec": _spec_dict(spec),
        "entries": len(entries),
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(path.suffix + ".tmp")
    # No name and mtime 0 in the gzip header: identical content gives identical bytes.
    with open(tmp, "wb") as raw, gzip.GzipFile(filename="", fileobj=raw, mode="wb", mtime=0) as gz:
        gz.write((json.dumps(header, sort_keys=True) + "\n").encode())
        for position, uci, value in entries:
            entry: dict[str, Any] = {"p": position, "v": value}
            if uci is not None:
                entry["m"] = uci
            gz.write((json.dumps(entry, sort_keys=True, separators=(",", ":")) + "\n").encode())
    tmp.replace(path)
    return len(entries)


def read_header(path: Path) -> dict[str, Any]:
    try:
        with gzip.open(path, "rt", encoding="utf-8") as f:
            header = json.loads(f.readline())
    except (OSError, json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise ExchangeError(f"{path}: not a site-builder analysis file ({exc})") from exc
    if not isinstance(header, dict) or header.get("format") != FORMAT:
        raise ExchangeError(f"{path}: not a site-builder analysis file (no {FORMAT} header)")
    if header.get("version") != VERSION:
        raise ExchangeError(
            f"{path}: analysis format version {header.get('version')} is not supported "
            f"(this site-builder reads version {VERSION})"
        )
    if header.get("spec", {}).get("schema") != SCHEMA:
        raise ExchangeError(f"{path}: value schema {header['spec'].get('schema')} != {SCHEMA}")
    return header


def file_digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def import_analysis(cache: EvalCache, path: Path, batch: int = 5000) -> tuple[AnalysisSpec, int]:
    """Fill the cache from an export. Existing entries are kept. Returns (spec, entries added)."""
    header = read_header(path)
    spec = spec_from_dict(header["spec"])
    added = 0
    pending: dict[str, Any] = {}
    with gzip.open(path, "rt", encoding="utf-8") as f:
        f.readline()
        for number, line in enumerate(f, start=2):
            try:
                entry = json.loads(line)
                position, value = entry["p"], entry["v"]
            except (json.JSONDecodeError, KeyError, TypeError) as exc:
                raise ExchangeError(f"{path}: entry on line {number} is broken ({exc})") from exc
            key = move_key(spec, position, entry["m"]) if "m" in entry else pv_key(spec, position)
            if key not in cache:
                pending[key] = value
                added += 1
            if len(pending) >= batch:
                cache.put_many(pending)
                pending = {}
    if pending:
        cache.put_many(pending)
    return spec, added


# --- evaluations from PGN comments (the lichess export format) ---------------------------

#: The "engine" of evaluations read from ``[%eval ...]`` comments: one line, best move unknown.
PGN_EVAL_SPEC = AnalysisSpec(
    "PGN [%eval] comments", depth=0, nodes=0, multipv=1, hash_mb=0, threads=0
)
UNKNOWN_MOVE = ""


def _mover_score(
    white_pov: chess.engine.PovScore, white_moves: bool
) -> tuple[int | None, int | None]:
    pov = white_pov.white() if white_moves else white_pov.black()
    mate = pov.mate()
    return (None, mate) if mate is not None else (pov.score(), None)


def pgn_eval_entries(game: chess.pgn.Game) -> dict[str, Any]:
    """Cache entries (keyed for :data:`PGN_EVAL_SPEC`) from one game's ``[%eval]`` comments.

    The comment after a move evaluates the position it leads to (White's view). So a
    position's score is the comment after the previous move, and a played move's score is the
    comment after it; a move that mates scores +10000 cp for the mover.
    """
    out: dict[str, Any] = {}
    board = game.board()
    before: chess.engine.PovScore | None = None
    for node in game.mainline():
        key = position_key(board)
        white_moves = board.turn == chess.WHITE
        after = node.eval()
        board.push(node.move)
        if after is None and board.is_checkmate():
            after = chess.engine.PovScore(chess.engine.Cp(10000), not board.turn)
        if before is not None:
            cp, mate = _mover_score(before, white_moves)
            out[pv_key(PGN_EVAL_SPEC, key)] = {
                "depth": 0,
                "seldepth": 0,
                "nodes": 0,
                "time": 0.0,
                "lines": [[UNKNOWN_MOVE, cp, mate]],
                "by_depth": [],
            }
        if after is not None:
            cp, mate = _mover_score(after, white_moves)
            out[move_key(PGN_EVAL_SPEC, key, node.move.uci())] = {
                "move": node.move.uci(),
                "cp": cp,
                "mate": mate,
                "depth": 0,
                "nodes": 0,
                "time": 0.0,
            }
        before = after
    return out


def import_pgn_evals(cache: EvalCache, path: Path) -> tuple[int, int]:
    """Fill the cache from a PGN whose moves carry ``[%eval]`` comments.

    Returns (games with evaluations, entries added). Games from set-up positions or of other
    variants are passed over.
    """
    from site_builder.ingest.pgn import decode_pgn, split_games

    text, _warning = decode_pgn(path.read_bytes())
    games = 0
    pending: dict[str, Any] = {}
    for _line, chunk in split_games(text):
        game = chess.pgn.read_game(io.StringIO(chunk))
        if game is None or game.errors or "FEN" in game.headers:
            continue
        if game.headers.get("Variant", "Standard").lower() not in {"standard", "chess", ""}:
            continue
        entries = pgn_eval_entries(game)
        if entries:
            games += 1
            pending.update({k: v for k, v in entries.items() if k not in cache})
    cache.put_many(pending)
    return games, len(pending)
