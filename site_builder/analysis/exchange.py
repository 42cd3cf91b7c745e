"""Analysis export and import: share evaluations between machines and ship them with content.

Format (version 1): gzip-compressed JSON Lines, UTF-8.

* Line 1, the header::

    {"format": "site-builder-analysis", "version": 1,
     "spec": {"engine": "Stockfish 15.1", "depth": 10, "nodes": 0, "multipv": 10,
              "hash_mb": 16, "threads": 1, "schema": 1},
     "entries": 12345}

  The header names the engine as it names itself, not its binary (a digest of a path and
  bytes on the machine that made the file means nothing elsewhere). Imported entries are
  keyed by the header's settings with ``binary`` = ``"imported"``: a build reads them after
  its own engine's answers (:meth:`EvalCache.lookup`), whatever machine made them.

* Then one entry per line, sorted by position then move:

  - principal lines of a position: ``{"p": POSITION, "v": VALUE}`` where POSITION is the
    EPD plus halfmove clock and VALUE holds ``depth``, ``seldepth``, ``nodes``, ``time``,
    ``lines`` (``[uci, cp, mate]`` per line, best first, scores from the side to move) and
    ``by_depth`` (``[depth, cp, mate, best uci]``);
  - a played move searched alone: ``{"p": POSITION, "m": UCI, "v": VALUE}`` with VALUE
    holding ``move``, ``cp``, ``mate``, ``depth``, ``nodes``, ``time``.

Every entry is checked by :func:`validate.invalid_reason` before it is stored: a bad one is
rejected with its line and reason, and a good one replaces an invalid entry already cached
(so importing a good file repairs a cache an older version let be poisoned).
"""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import zlib
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import chess
import chess.engine
import chess.pgn

from site_builder.analysis.cache import EvalCache
from site_builder.analysis.spec import (
    IMPORTED,
    SCHEMA,
    AnalysisSpec,
    move_key,
    position_key,
    pv_key,
)
from site_builder.analysis.validate import UNKNOWN_MOVE as UNKNOWN
from site_builder.analysis.validate import invalid_reason
from site_builder.errors import SiteBuilderError

FORMAT = "site-builder-analysis"
VERSION = 1


class ExchangeError(SiteBuilderError):
    """An analysis file that cannot be read."""


def _spec_dict(spec: AnalysisSpec) -> dict[str, Any]:
    settings = {k: v for k, v in asdict(spec).items() if k != "binary"}
    return {**settings, "schema": SCHEMA}


def spec_from_dict(data: dict[str, Any]) -> AnalysisSpec:
    """The settings of an analysis file's header (its ``binary``, if any, is not kept)."""
    if not isinstance(data, dict):
        raise ExchangeError("analysis header has no settings")
    try:
        spec = AnalysisSpec(
            engine=data["engine"],
            depth=data["depth"],
            nodes=data["nodes"],
            multipv=data["multipv"],
            hash_mb=data["hash_mb"],
            threads=data["threads"],
        )
    except KeyError as exc:
        raise ExchangeError(f"analysis header lacks setting {exc}") from exc
    numbers = (spec.depth, spec.nodes, spec.multipv, spec.hash_mb, spec.threads)
    if (
        not isinstance(spec.engine, str)
        or not all(isinstance(n, int) and not isinstance(n, bool) and n >= 0 for n in numbers)
        or spec.multipv < 1
    ):
        raise ExchangeError(f"analysis header has invalid settings {data!r}")
    return spec


def iter_entries(cache: EvalCache, spec: AnalysisSpec) -> Iterator[tuple[str, str | None, Any]]:
    """(position, move or None, value) for every cache entry made with ``spec``'s settings,
    by its engine or imported, sorted (the engine's own entry wins)."""
    found: dict[tuple[str, str], str] = {}
    for s in (spec.imported(), spec) if spec.binary != IMPORTED else (spec,):
        pv_prefix = f"pv|{s.key}|"
        mv_prefix = f"mv|{s.key}|"
        for key in cache:
            if key.startswith(pv_prefix):
                found[(key[len(pv_prefix) :], "")] = key
            elif key.startswith(mv_prefix):
                position, move = key[len(mv_prefix) :].rsplit("|", 1)
                found[(position, move)] = key
    for (position, uci), key in sorted(found.items()):
        yield position, uci or None, cache.get(key)


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
    except (OSError, EOFError, zlib.error, json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise ExchangeError(f"{path}: not a site-builder analysis file ({exc})") from exc
    if not isinstance(header, dict) or header.get("format") != FORMAT:
        raise ExchangeError(f"{path}: not a site-builder analysis file (no {FORMAT} header)")
    if header.get("version") != VERSION:
        raise ExchangeError(
            f"{path}: analysis format version {header.get('version')} is not supported "
            f"(this site-builder reads version {VERSION})"
        )
    spec = header.get("spec")
    if not isinstance(spec, dict) or spec.get("schema") != SCHEMA:
        schema = spec.get("schema") if isinstance(spec, dict) else None
        raise ExchangeError(f"{path}: value schema {schema} != {SCHEMA}")
    return header


def file_digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@dataclass
class ImportResult:
    spec: AnalysisSpec
    added: int = 0
    repaired: int = 0  # invalid cached entries replaced
    rejected: list[tuple[int, str]] = field(default_factory=list)  # (line, reason)


def _store(cache: EvalCache, pending: dict[str, Any], result: ImportResult) -> None:
    """Write the entries not yet cached, and those replacing an invalid cached one."""
    existing = cache.get_many(pending)
    new = {}
    for key, value in pending.items():
        old = existing.get(key)
        if old is None:
            result.added += 1
        elif invalid_reason(key, old) is not None:
            result.repaired += 1
        else:
            continue
        new[key] = value
    cache.put_many(new)


def import_analysis(cache: EvalCache, path: Path, batch: int = 5000) -> ImportResult:
    """Fill the cache from an export: valid entries not cached yet, or replacing invalid
    cached ones. Invalid entries of the file are rejected (listed in the result)."""
    header = read_header(path)
    result = ImportResult(spec_from_dict(header["spec"]).imported())
    spec = result.spec
    pending: dict[str, Any] = {}
    number = 1
    try:
        with gzip.open(path, "rt", encoding="utf-8") as f:
            f.readline()
            for number, line in enumerate(f, start=2):
                try:
                    entry = json.loads(line)
                    position, value, uci = entry["p"], entry["v"], entry.get("m")
                except (json.JSONDecodeError, KeyError, TypeError, AttributeError) as exc:
                    result.rejected.append((number, f"not an entry ({exc})"))
                    continue
                if not isinstance(position, str) or not isinstance(uci, str | None):
                    result.rejected.append((number, "position or move is not a string"))
                    continue
                key = move_key(spec, position, uci) if uci is not None else pv_key(spec, position)
                reason = invalid_reason(key, value)
                if reason is not None:
                    result.rejected.append((number, reason))
                    continue
                pending[key] = value
                if len(pending) >= batch:
                    _store(cache, pending, result)
                    pending = {}
    except (OSError, EOFError, zlib.error, UnicodeDecodeError) as exc:
        _store(cache, pending, result)
        raise ExchangeError(
            f"{path}: the file is truncated or damaged after line {number} ({exc}); the "
            f"{result.added} valid entries before it were imported. Export or download the "
            "file again and import it again."
        ) from exc
    _store(cache, pending, result)
    return result


# --- evaluations from PGN comments (the lichess export format) ---------------------------

#: The "engine" of evaluations read from ``[%eval ...]`` comments: one line, best move unknown.
PGN_EVAL_SPEC = AnalysisSpec(
    "PGN [%eval] comments", depth=0, nodes=0, multipv=1, hash_mb=0, threads=0, binary=IMPORTED
)
UNKNOWN_MOVE = UNKNOWN


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
        entries = {k: v for k, v in pgn_eval_entries(game).items() if not invalid_reason(k, v)}
        if entries:
            games += 1
            pending.update(entries)
    result = ImportResult(PGN_EVAL_SPEC)
    _store(cache, pending, result)
    return games, result.added + result.repaired
