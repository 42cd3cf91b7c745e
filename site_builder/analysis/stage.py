"""The analysis stage: games in, site inputs out.

:func:`prepare` runs it: read the PGN collection (:func:`ingest`), choose the games the
engine analyses (:func:`analysis_scope`), import the shipped analysis
(:func:`import_shipped`), send only the positions missing from the evaluation cache to an
engine pool, local or Dask (:func:`run_analysis`), read the move rows of every fully
analysed game (:func:`gather_moves`) and make the :class:`SiteData` the metric families
receive (:func:`make_site`). The build cache keeps each game's plies and move rows between
builds; :func:`default_cache_dir` and :func:`build_cache_dir` say where the caches live.
"""

from __future__ import annotations

import asyncio
import fnmatch
import functools
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import chess
import numpy as np
import pandas as pd
import pyarrow as pa
from tqdm import tqdm

from site_builder.analysis import exchange
from site_builder.analysis.cache import IMPORTED_PREFIX, EvalCache
from site_builder.analysis.engine import engine_name, open_engine, resolve_engine
from site_builder.analysis.pool import LocalPool, PoolStats, default_workers
from site_builder.analysis.positions import Ply, Wanted, analysed_plies, chunked, game_plies
from site_builder.analysis.spec import AnalysisSpec, engine_identity, move_of
from site_builder.config import Settings
from site_builder.errors import SiteBuilderError
from site_builder.forked import fork_pool, keep, processes, results, shared_pool
from site_builder.incremental import (
    BUILD_CACHE_VERSION,
    BuildCache,
    checked_databases,
    collector_paused,
    collector_running,
    count_as_checked,
    digest,
    warn,
)
from site_builder.ingest.names import AliasTable, near_duplicates
from site_builder.ingest.pgn import IngestResult, read_collection
from site_builder.memo import Kind, Memo, entry
from site_builder.metrics.elo_fill import fill_elos
from site_builder.metrics.moves import move_row, move_table
from site_builder.model import GameRecord, PgnDate, Problem
from site_builder.partitions import Partitions
from site_builder.render.slugs import unique_slugs
from site_builder.sitedata import BuildState, SiteData, event_key
from site_builder.stats import BuildStats, Clock
from site_builder.store import (
    SCHEMA,
    GameStore,
    MoveStore,
    PartitionWriter,
    UnreadablePartition,
    partition_of,
    store_digest,
    to_arrow,
)

if TYPE_CHECKING:
    from site_builder.analysis.dask_backend import DaskPool

Echo = Callable[[str], None]
#: The analysed plies of some games, by game id.
PliesOf = Callable[[list[str]], dict[str, list[Ply]]]


def default_cache_dir(content_dir: Path) -> Path:
    return content_dir.resolve().parent / ".cache" / "analysis"


def ply_key(fingerprint: str, first_move: int | None) -> str:
    """Build-cache key of a game's plies (position keys from ``first_move``; none when
    the game is not analysed)."""
    return entry(Kind.PLIES, fingerprint, str(first_move))


def build_cache_dir(cache_dir: Path) -> Path:
    """The build cache lives beside the evaluation cache."""
    return cache_dir.with_name(cache_dir.name + "-build")


def identify_engine(path: str) -> str:
    """Start the engine once to read its name and version (``id name``)."""

    async def ask() -> str:
        protocol = await open_engine(path, 16, 1)
        try:
            return engine_name(protocol)
        finally:
            await protocol.quit()

    resolve_engine(path)
    return asyncio.run(ask())


def make_spec(settings: Settings, engine: str, binary: str = "") -> AnalysisSpec:
    """``binary``: :func:`engine_identity` of the executable (part of the cache key)."""
    a = settings.analysis
    return AnalysisSpec(engine, a.depth, a.nodes, a.multipv, a.hash_mb, a.threads, binary)


def ingest(
    content_dir: Path, settings: Settings, build_cache: BuildCache | None = None
) -> IngestResult:
    aliases = AliasTable.load(content_dir / settings.content.aliases)
    games_dir = content_dir / settings.content.games
    if not games_dir.is_dir():
        return IngestResult(
            problems=[
                Problem(settings.content.games, 0, "skipped", "(folder)", "games folder not found")
            ]
        )
    reader = build_cache.cached_reader(aliases, settings.time_control) if build_cache else None
    return read_collection(
        games_dir, aliases, settings.time_control, relative_to=content_dir, reader=reader
    )


def quick_inputs(
    content_dir: Path,
    settings: Settings,
    cache_dir: Path,
    build_cache: BuildCache,
    code: str,
    templates: str,
) -> dict[str, Any]:
    """Everything a build reads, known without reading a game: the content files' digests
    (from their modification time and size when unchanged), the settings, the code, the
    templates, the engine and the evaluation cache's identity and size. When all equal the
    last build's, the build has nothing to do (and a large site learns it in a second)."""
    files: dict[str, str] = {}
    for folder in (settings.content.games, settings.content.analysis):
        root = content_dir / folder
        if root.is_dir():
            for path in sorted(q for q in root.rglob("*") if q.is_file()):
                files[path.relative_to(content_dir).as_posix()] = build_cache.file_hash(path)
    aliases = content_dir / settings.content.aliases
    if aliases.is_file():
        files[settings.content.aliases] = build_cache.file_hash(aliases)
    a = settings.analysis
    engine = ""
    if a.source != "pgn-eval":
        try:
            engine = engine_identity(resolve_engine(a.engine))
        except (OSError, SiteBuilderError):
            engine = "missing"
    evaluations: list[Any] = []
    if cache_dir.is_dir():
        with EvalCache(cache_dir) as cache:
            evaluations = [cache.identity(), len(cache)]
    return {
        "files": files,
        "settings": settings.digest(),
        "code": code,
        "templates": templates,
        "engine": engine,
        "evaluations": evaluations,
    }


def settled(quick: dict[str, Any] | None, cache_dir: Path) -> dict[str, Any] | None:
    """:func:`quick_inputs` as the next build will find them: with the evaluation cache as
    this build left it (its analysis and imports added entries)."""
    if quick is None or not cache_dir.is_dir():
        return quick
    with EvalCache(cache_dir) as cache:
        return {**quick, "evaluations": [cache.identity(), len(cache)]}


def analysis_scope(
    games: list[GameRecord], settings: Settings
) -> tuple[list[GameRecord], dict[str, str]]:
    """Games the engine analyses, and why each other game is not analysed."""
    a = settings.analysis
    prefix = settings.content.games.rstrip("/") + "/"
    chosen, skipped = [], {}
    for g in games:
        rel = g.source[len(prefix) :] if g.source.startswith(prefix) else g.source
        if g.time_class not in a.classes:
            skipped[g.game_id] = f"{g.time_class} game (analysis covers {', '.join(a.classes)})"
        elif any(fnmatch.fnmatch(rel, pat) for pat in a.exclude):
            skipped[g.game_id] = "file excluded by [analysis] exclude"
        else:
            chosen.append(g)
    return chosen, skipped


def import_shipped(content_dir: Path, settings: Settings, cache: EvalCache, echo: Echo) -> int:
    """Import every analysis export (and [%eval] PGN) under content/analysis once.

    Each file is remembered by its digest, so it is read again only when it changes.
    """
    folder = content_dir / settings.content.analysis
    if not folder.is_dir():
        return 0
    total = 0
    for path in sorted([*folder.glob("*.jsonl.gz"), *folder.glob("*.pgn")]):
        marker = f"{IMPORTED_PREFIX}{exchange.file_digest(path)}"
        if marker in cache:
            continue
        if path.suffix == ".pgn":
            spec = exchange.PGN_EVAL_SPEC
            _games, added = exchange.import_pgn_evals(cache, path)
        else:
            imported = exchange.import_analysis(cache, path)
            spec, added = imported.spec, imported.added + imported.repaired
            if imported.rejected:
                line, reason = imported.rejected[0]
                echo(
                    f"{path}: {len(imported.rejected)} invalid entries rejected "
                    f"(the first, line {line}: {reason})."
                )
        cache.put_many({marker: {"file": path.name, "entries": added}})
        echo(f"Imported {added} evaluations from {path.name} ({spec.describe()}).")
        total += added
    return total


def make_dask_pool(
    scheduler: str, engine_path: str, spec: AnalysisSpec, settings: Settings
) -> DaskPool:
    try:
        from site_builder.analysis.dask_backend import DaskPool as Pool
    except ImportError as exc:
        raise SiteBuilderError(
            f"--scheduler needs Dask ({exc}); "
            "install it with: pip install 'site-builder[distributed]'"
        ) from exc
    a = settings.analysis
    return Pool(scheduler, engine_path, spec, a.deadline_s, a.max_tries)


def run_analysis(
    needed: Wanted,
    spec: AnalysisSpec,
    settings: Settings,
    cache: EvalCache,
    engine_path: str,
    stats: BuildStats,
    progress: bool,
    scheduler: str | None = None,
) -> None:
    """Analyse the positions ``needed`` holds that the evaluation cache lacks (those added
    since the last call), and count them in ``stats``."""
    tasks = needed.take_tasks()
    stats.positions = len(needed)
    stats.cache_hits = needed.hits
    stats.reused = 0
    if not tasks:
        return
    a = settings.analysis
    pool: LocalPool | DaskPool
    if scheduler:
        pool = make_dask_pool(scheduler, engine_path, spec, settings)
    else:
        pool = LocalPool(
            engine_path, spec, a.workers or default_workers(), a.deadline_s, a.max_tries
        )
    bar = tqdm(
        total=len(tasks), unit="pos", desc="Analysing", disable=not progress, dynamic_ncols=True
    )
    bar.set_postfix(cached=stats.cache_hits + stats.reused, engines=pool.workers)

    def on_chunk(results: dict[str, Any], done: int) -> None:
        cache.put_many(results)
        bar.update(done)

    try:
        pool_stats: PoolStats = pool.run(chunked(tasks, a.chunk_size), on_chunk)
    finally:
        bar.close()
    stats.analysed += pool_stats.positions
    stats.searches += pool_stats.searches
    stats.engine_seconds += pool_stats.engine_seconds
    stats.failed += pool_stats.failed


def gather_moves(
    games: list[GameRecord],
    plies: PlyKeys,
    spec: AnalysisSpec,
    cache: EvalCache,
    mate_cp: int,
    not_analysed: dict[str, str],
    build_cache: BuildCache,
    row_keys: Mapping[str, str],
    keep: Callable[[list[dict[str, Any]]], None],
    keep_table: Callable[[pa.Table], None],
    workers: int = 1,
) -> set[str]:
    """The fully analysed games among ``games``, each one's move rows handed to ``keep``
    (those the build cache keeps) or ``keep_table`` (those made now, as Arrow tables, each
    game's also kept in the build cache under ``row_keys``); the others get a reason in
    ``not_analysed``. Rows not kept are made in ``workers`` processes, a round of games at a
    time: each worker reads the games' plies (``plies``) from the build cache, keeps the
    rows there and sends them back as columns, so this process holds neither as Python
    objects."""
    done: set[str] = set()
    todo: list[GameRecord] = []
    for game in games:
        cached = build_cache.get(row_keys[game.game_id])
        if cached is not None:
            keep(cached)
            done.add(game.game_id)
        else:
            todo.append(game)

    rounds = (
        [(*plies.task(g), row_keys[g.game_id]) for g in todo[start : start + _ROWS_ROUND]]
        for start in range(0, len(todo), _ROWS_ROUND)
    )
    context = {
        "cache": cache,
        "spec": spec,
        "mate_cp": mate_cp,
        "build_cache": build_cache,
        "first_move": plies.first_move,
    }
    for tasks, made in in_rounds(_rows_of_games, rounds, workers, context):
        for (game, *_), (complete, table) in zip(tasks, made, strict=True):
            if table is not None:
                keep_table(table)
            if not complete:
                not_analysed[game.game_id] = "analysis incomplete (a position failed or is missing)"
                continue
            done.add(game.game_id)
        del tasks, made  # a round's plies and rows at a time (and the next one's, being made)
    return done


def game_rows(
    game: GameRecord, plies: list[Ply], spec: AnalysisSpec, cache: EvalCache, mate_cp: int
) -> list[dict[str, Any]] | None:
    """The move rows of a game's analysed ``plies``; None when a position's analysis is
    missing."""
    rows = []
    board = chess.Board()
    replayed = 0
    moves = tuple(game.moves)
    for ply in plies:
        lines = cache.lookup(spec, ply.position)
        if lines is None:
            return None
        in_lines = any(line[0] == ply.played for line in lines["lines"])
        single = None if in_lines else cache.lookup(spec, ply.position, ply.played)
        if not in_lines and single is None:
            return None
        row = move_row(game, ply, lines, single, mate_cp)
        while replayed < ply.ply:  # the board before this ply, for the best move's SAN
            board.push(move_of(moves[replayed]))
            replayed += 1
        row["best_san"] = board.san(move_of(row["best"])) if row["best"] else "?"
        rows.append(row)
    return rows


#: Games a round of plies takes (made in workers, kept in the build cache): what the build
#: holds of their plies at once.
_GAMES_PER_ROUND = 2000
#: Games whose move rows a round makes: the rows come back as Python objects, about 6 KB a
#: row in the build (30 rows a game).
_ROWS_ROUND = 500
#: Positions still to search after which the engines run before more games are read: a
#: corpus never analysed holds tens of millions (each about 0.3 KB as a task), a round at
#: most this many (a few hours of a 2-core machine's engines, minutes of a cluster's).
POSITIONS_PER_ANALYSIS = 500_000
#: Below this many items the work stays in the build's process.
_FEW = 64

#: What the stage's forked workers read (set just before they fork; the evaluation cache is
#: opened again in each, as an SQLite connection must not cross a fork).
_WORK: dict[str, Any] = {}


def _reopen() -> None:
    cache = _WORK.get("cache")
    if isinstance(cache, EvalCache):
        keep(cache)
        _WORK["cache"] = EvalCache(cache.directory)
    store = _WORK.get("build_cache")
    if isinstance(store, BuildCache):
        keep(store)
        _WORK["build_cache"] = BuildCache(store.directory)


#: A work of the stage's workers: the values of a list of items, in order.
Work = Callable[[list[Any]], list[Any]]

#: Caches a pool's worker opened, by folder: one connection for all its tasks.
_OPENED: dict[str, EvalCache] = {}
_OPENED_BUILD: dict[str, BuildCache] = {}


@dataclass(frozen=True)
class _BuildCacheAt:
    """A build cache sent to a pool's worker: its folder, and the databases the build found
    sound (so the worker does not read a large one through again)."""

    directory: str
    checked: frozenset[Path]


def _sendable(context: dict[str, Any]) -> dict[str, Any]:
    """``context`` as a pool's worker receives it: caches by their folders."""
    out: dict[str, Any] = {}
    for k, v in context.items():
        if isinstance(v, EvalCache):
            out[k] = str(v.directory)
        elif isinstance(v, BuildCache):
            out[k] = _BuildCacheAt(str(v.directory), checked_databases())
        else:
            out[k] = v
    return out


def _in_context(work: Work, context: dict[str, Any], items: list[Any]) -> list[Any]:
    """In a pool's worker: ``work`` of the items with ``context`` in ``_WORK`` (caches come
    as their folders, each opened once per worker)."""
    _WORK.clear()
    _WORK.update(context)
    folder = context.get("cache")
    if isinstance(folder, str):
        if folder not in _OPENED:
            _OPENED[folder] = EvalCache(Path(folder))
        _WORK["cache"] = _OPENED[folder]
    store = context.get("build_cache")
    if isinstance(store, _BuildCacheAt):
        if store.directory not in _OPENED_BUILD:
            count_as_checked(store.checked)
            _OPENED_BUILD[store.directory] = BuildCache(Path(store.directory))
        _WORK["build_cache"] = _OPENED_BUILD[store.directory]
    try:
        return work(items)
    finally:
        _WORK.clear()


@dataclass(frozen=True)
class PlyKeys:
    """Where a worker finds each game's plies: the build-cache key (:func:`ply_key`) and
    the full move position keys start from (``keys_from``); the engine looks at the plies
    from ``first_move`` on (:func:`analysed_plies`)."""

    keys: Mapping[str, str]
    keys_from: Mapping[str, int | None]
    first_move: int

    def task(self, game: GameRecord) -> tuple[GameRecord, int | None, str]:
        return game, self.keys_from[game.game_id], self.keys[game.game_id]


def _plies_kept(
    tasks: list[tuple[GameRecord, int | None, str]], store: BuildCache
) -> Iterator[list[Ply]]:
    """Each game's plies, from the build cache or made; those made are kept there at the
    end, in one transaction (a worker does not hold the cache's write lock while it
    works)."""
    made: list[tuple[str, list[Ply]]] = []
    try:
        for game, keys_from, key in tasks:
            found = store.get(key)
            if found is None:
                found = game_plies(game, keys_from)
                made.append((key, found))
            yield found
    finally:
        if made:
            with store.transact():
                for key, plies in made:
                    store.set(key, plies)


def _rows_of_games(
    tasks: list[tuple[GameRecord, int | None, str, str]],
) -> list[tuple[bool, pa.Table | None]]:
    """The move rows of these games (each with its plies' start and key, and its rows'
    key): each game's kept in the build cache (after all are made, in one transaction),
    and all of them sent back as one Arrow table, with the first game. Per game: (fully
    analysed, the table or None)."""
    spec, cache, mate_cp = _WORK["spec"], _WORK["cache"], _WORK["mate_cp"]
    store: BuildCache = _WORK["build_cache"]
    first_move: int = _WORK["first_move"]
    every_plies = _plies_kept([(g, k, key) for g, k, key, _ in tasks], store)
    made = [
        (key, game_rows(game, analysed_plies(plies, first_move), spec, cache, mate_cp))
        for (game, _, _, key), plies in zip(tasks, every_plies, strict=True)
    ]
    with store.transact():
        for key, rows in made:
            if rows is not None:
                store.set(key, rows)
    every = [row for _, rows in made if rows is not None for row in rows]
    table = pa.Table.from_pylist(every, schema=SCHEMA) if every else None
    return [(rows is not None, table if i == 0 else None) for i, (_, rows) in enumerate(made)]


def _wanted_of_games(
    tasks: list[tuple[GameRecord, int | None, str]],
) -> list[list[tuple[str, str]]]:
    """The (position, played move) pairs the engine must have for each game (its plies
    read from the build cache, or made and kept there)."""
    first_move: int = _WORK["first_move"]
    return [
        [(p.position, p.played) for p in analysed_plies(plies, first_move)]
        for plies in _plies_kept(tasks, _WORK["build_cache"])
    ]


def in_rounds(
    work: Work,
    rounds: Iterable[list[Any]],
    workers: int,
    context: dict[str, Any],
) -> Iterator[tuple[list[Any], list[Any]]]:
    """(items, :func:`in_processes` of them) for each round of items, in order. In the build's
    pool the next round is sent before a round's results are handed back, so the workers
    make it while this process keeps the last one (and reads the next round's inputs)."""
    pool = shared_pool()
    if pool is None or workers <= 1:
        for items in rounds:
            yield items, in_processes(work, items, workers, context)
        return
    pending: tuple[list[Any], Callable[[], list[Any]]] | None = None
    for items in rounds:
        started = items, _sent(pool, work, items, workers, context)
        if pending is not None:
            yield pending[0], pending[1]()
        pending = started
    if pending is not None:
        yield pending[0], pending[1]()


def _sent(
    pool: ProcessPoolExecutor,
    work: Work,
    items: list[Any],
    workers: int,
    context: dict[str, Any],
) -> Callable[[], list[Any]]:
    """:func:`in_processes` of ``items`` in ``pool``, sent now: its results when called (a
    few items are worked here at once)."""
    if len(items) < _FEW:
        done = in_processes(work, items, 1, context)
        return lambda: done
    sent = _sendable(context)
    futures = [pool.submit(_in_context, work, sent, share) for share in _shares(items, workers)]
    return lambda: [value for chunk in results(futures) for value in chunk]


def _shares(items: list[Any], workers: int) -> list[list[Any]]:
    """``items`` in consecutive shares, about four a worker."""
    size = max(1, len(items) // (workers * 4))
    return [items[i : i + size] for i in range(0, len(items), size)]


def in_processes(work: Work, items: list[Any], workers: int, context: dict[str, Any]) -> list[Any]:
    """``work`` of the items, a share at a time, in order: in the build's pool
    (:func:`shared_pool`), else in ``workers`` processes forked from this one (``context``
    is what ``work`` reads from ``_WORK``), or here for a few items."""
    pool = shared_pool()
    if pool is not None and workers > 1 and len(items) >= _FEW:
        return _sent(pool, work, items, workers, context)()
    _WORK.clear()
    _WORK.update(context)
    try:
        if workers <= 1 or len(items) < _FEW:
            return work(items)
        with fork_pool(workers, _reopen) as pool:
            return [value for done in pool.map(work, _shares(items, workers)) for value in done]
    finally:
        _WORK.clear()


def rows_key(
    fingerprint: str, spec: AnalysisSpec, mate_cp: int, first_move: int, cache: EvalCache
) -> str:
    """Build-cache key of a game's move rows (``fingerprint``: :func:`game_fingerprint`):
    present only once the game is fully analysed. It names the evaluation cache the rows
    were read from (:meth:`EvalCache.identity`), so rows outlive neither an emptied or
    salvaged evaluation cache nor entries ``doctor --check`` removed: the build then reads,
    and analyses again what is missing, as the user who emptied the cache expects."""
    return entry(Kind.ROWS, fingerprint, spec.key, str(mate_cp), str(first_move), cache.identity())


def game_fingerprint(game: GameRecord) -> str:
    """Everything of a game that a move row or a ply depends on, and the build cache's
    version of them (their keys are made from it, not from the code)."""
    return digest(
        [
            BUILD_CACHE_VERSION,
            game.game_id,
            game.white,
            game.black,
            game.white_elo,
            game.black_elo,
            str(game.date),
            game.time_class,
            list(game.moves),
            list(game.sans),
        ]
    )


def fingerprint_of(site: SiteData, game: GameRecord) -> str:
    """:func:`game_fingerprint`, computed once per build (kept in ``site.cache.fingerprints``)."""
    found = site.cache.fingerprints.get(game.game_id)
    if found is None:
        found = site.cache.fingerprints[game.game_id] = game_fingerprint(game)
    return found


@dataclass(frozen=True)
class PliesFromRecord:
    """Every ply of a game whose plies the build cache does not hold (a game not analysed,
    or plies the cache lost), made from its record: picklable, so a render worker started
    as a new process makes them too."""

    games: Mapping[str, GameRecord]
    #: game_id → the full move its position keys start at (None: not analysed)
    keys_from: Mapping[str, int | None]

    def __call__(self, game_id: str) -> list[Ply]:
        return game_plies(self.games[game_id], self.keys_from[game_id])


def cached_plies(
    games: list[GameRecord], plies: PlyKeys, build_cache: BuildCache
) -> dict[str, list[Ply]]:
    """Every ply of these games, in this process: kept in the build cache (the stage's
    workers keep every game's), or made and kept (:func:`_plies_kept`)."""
    tasks = [plies.task(g) for g in games]
    found = _plies_kept(tasks, build_cache)
    return {g.game_id: plies for (g, _, _), plies in zip(tasks, found, strict=True)}


def prepare(
    content_dir: Path,
    settings: Settings,
    stats: BuildStats,
    *,
    cache_dir: Path | None = None,
    analyse_only: bool = False,
    progress: bool = True,
    echo: Echo = print,
    scheduler: str | None = None,
    build_cache: BuildCache | None = None,
    previous_slugs: Mapping[str, str] | None = None,
) -> SiteData | None:
    """Ingest and analyse; the site's inputs (None when ``analyse_only``). ``previous_slugs``
    (the output's last build: player name → slug) keeps existing players' addresses.

    The games' plies and move rows are read a round of games at a time: the build holds
    one round's, whatever the corpus.
    """
    clock = Clock(stats)
    cache_dir = cache_dir or default_cache_dir(content_dir)
    if build_cache is not None:
        return _prepare(
            content_dir,
            settings,
            stats,
            cache_dir,
            build_cache,
            clock,
            analyse_only,
            progress,
            echo,
            scheduler,
            previous_slugs,
        )
    with BuildCache(build_cache_dir(cache_dir), stamp=True) as own_cache:
        return _prepare(
            content_dir,
            settings,
            stats,
            cache_dir,
            own_cache,
            clock,
            analyse_only,
            progress,
            echo,
            scheduler,
            previous_slugs,
        )


def _prepare(
    content_dir: Path,
    settings: Settings,
    stats: BuildStats,
    cache_dir: Path,
    build_cache: BuildCache,
    clock: Clock,
    analyse_only: bool,
    progress: bool,
    echo: Echo,
    scheduler: str | None,
    previous_slugs: Mapping[str, str] | None = None,
) -> SiteData | None:
    result = ingest(content_dir, settings, build_cache)
    games = sorted(result.games, key=lambda g: (g.date.sort_key, g.source, g.line))
    stats.games, stats.files = len(games), len(result.files)
    for p in result.problems:
        stats.problems[p.severity] = stats.problems.get(p.severity, 0) + 1
    echo(
        f"Read {len(games)} games from {len(result.files)} files; "
        + (", ".join(f"{n} {k}" for k, n in sorted(stats.problems.items())) or "no problems")
        + "."
    )
    chosen, not_analysed = analysis_scope(games, settings)
    a = settings.analysis
    keys_from = {g.game_id: None if g.game_id in not_analysed else a.first_move for g in games}
    fingerprints = {g.game_id: game_fingerprint(g) for g in games}
    ply_keys = {gid: ply_key(fingerprints[gid], start) for gid, start in keys_from.items()}
    plies = PlyKeys(ply_keys, keys_from, a.first_move)
    by_id = {g.game_id: g for g in games}

    def plies_of(ids: Iterable[str]) -> dict[str, list[Ply]]:
        """The analysed plies of these games (the build cache keeps every game's plies)."""
        with collector_paused():
            found = cached_plies([by_id[i] for i in ids], plies, build_cache)
        return {i: analysed_plies(ps, a.first_move) for i, ps in found.items()}

    stats.analysed_games = len(chosen)
    clock.lap("ingest")

    spec: AnalysisSpec | None = None
    store = MoveStore(build_cache.directory / "moves", settings.build.partitions)
    row_keys: dict[str, str] = {}
    analysed: set[str] = set()
    pending: list[str] = []  # games whose plies this build reads: their rows are not kept
    failed_problems: list[Problem] = []
    if chosen:
        if a.source == "pgn-eval":
            engine_path, spec = "", exchange.PGN_EVAL_SPEC
        else:
            engine_path = resolve_engine(a.engine)
            spec = make_spec(
                settings,
                build_cache.engine_name(engine_path, identify_engine),
                engine_identity(engine_path),
            )
        with EvalCache(cache_dir) as cache:
            stats.imported = import_shipped(content_dir, settings, cache, echo)
            mate_cp = settings.quality.mate_cp
            row_keys = {
                g.game_id: rows_key(fingerprints[g.game_id], spec, mate_cp, a.first_move, cache)
                for g in chosen
            }
            # Games whose rows the build cache keeps need neither plies nor analysis
            # (imported evaluations: every game's positions are counted).
            complete: set[str] = set()
            if a.source != "pgn-eval":
                complete = {gid for gid, key in row_keys.items() if key in build_cache}
            pending = [g.game_id for g in chosen if g.game_id not in complete]
            needed = Wanted(spec, cache)
            # A round's plies at once, in the workers: this process gets their pairs.
            rounds = (
                [plies.task(by_id[gid]) for gid in pending[start : start + _GAMES_PER_ROUND]]
                for start in range(0, len(pending), _GAMES_PER_ROUND)
            )
            context = {"build_cache": build_cache, "first_move": a.first_move}
            analyse = functools.partial(
                run_analysis, needed, spec, settings, cache, engine_path, stats, progress, scheduler
            )
            with collector_paused():
                for _, pairs in in_rounds(_wanted_of_games, rounds, processes(), context):
                    needed.add(pair for game in pairs for pair in game)
                    if a.source != "pgn-eval" and needed.pending >= POSITIONS_PER_ANALYSIS:
                        with collector_running():  # before more games: a round's positions
                            analyse()
            if a.source == "pgn-eval":
                stats.positions, stats.cache_hits = len(needed), needed.hits
            else:
                analyse()
            clock.lap("analysis")
            if analyse_only:
                _echo_analysis(echo, spec, stats)
                return None
            with collector_paused():
                analysed = write_moves(
                    store,
                    chosen,
                    complete,
                    plies,
                    spec,
                    cache,
                    mate_cp,
                    not_analysed,
                    build_cache,
                    row_keys,
                )
            if complete:  # their positions, from the store
                # The store holds the complete games' positions and the new games' (all in
                # ``needed``): what the complete games bring beyond them was reused.
                stored, wanted = store.position_hashes(), needed.positions
                stats.positions = len(np.union1d(stored, wanted))
                stats.reused = len(np.setdiff1d(stored, wanted, assume_unique=True))
            _echo_analysis(echo, spec, stats)
        if stats.failed:
            failed_problems = failed_positions_report(
                stats.failed, [by_id[gid] for gid in pending], plies_of
            )
    elif analyse_only:
        echo("No games to analyse.")
        return None
    site = make_site(
        settings,
        games,
        result.problems + failed_problems,
        spec,
        None,
        analysed,
        not_analysed,
        stats,
        AliasTable.load(content_dir / settings.content.aliases),
        previous_slugs,
        store,
        GameStore(build_cache.directory, ply_keys, row_keys, PliesFromRecord(by_id, keys_from)),
    )
    site.cache.fingerprints = fingerprints
    clock.lap("moves")
    return site


def _echo_analysis(echo: Echo, spec: AnalysisSpec, stats: BuildStats) -> None:
    echo(
        f"Analysis ({spec.describe()}): {stats.positions} positions needed, "
        f"{stats.reused} reused from the last build, "
        f"{stats.cache_hits} from the evaluation cache, {stats.analysed} analysed"
        + (f", {len(stats.failed)} failed" if stats.failed else "")
        + "."
    )


def failed_positions_report(
    failed: list[tuple[str, str]], games: list[GameRecord], plies_of: PliesOf
) -> list[Problem]:
    """One report line per game that contains a position the engine could not analyse
    (``games``: those analysed in this build, whose plies ``plies_of`` gives)."""
    reasons = dict(failed)
    out = []
    for start in range(0, len(games), _GAMES_PER_ROUND):
        chunk = games[start : start + _GAMES_PER_ROUND]
        plies = plies_of([g.game_id for g in chunk])
        for game in chunk:
            for p in plies[game.game_id]:
                if p.position in reasons:
                    move = f"{p.move_number}{'.' if p.white else '...'} {p.san}"
                    out.append(
                        Problem(
                            game.source,
                            game.line,
                            "warning",
                            game.label(),
                            f"engine failed on the position before {move} ({p.position}): "
                            f"{reasons[p.position]}; the game is not analysed",
                        )
                    )
                    break
    return out


def make_site(
    settings: Settings,
    games: list[GameRecord],
    problems: list[Problem],
    spec: AnalysisSpec | None,
    rows: list[dict[str, Any]] | None,
    analysed: set[str],
    not_analysed: dict[str, str],
    stats: BuildStats,
    aliases: AliasTable | None = None,
    previous_slugs: Mapping[str, str] | None = None,
    store: MoveStore | None = None,
    game_store: GameStore | None = None,
) -> SiteData:
    """The site's data, its moves in ``store`` (``rows``: move rows to write there, for a
    site made from rows in memory; the analysis stage writes the store itself);
    ``aliases`` (the alias table) and ``previous_slugs`` (the output's
    last build) decide who keeps a shared plain slug, and the alias table suggests alias
    lines for names that normalise alike (see render.slugs)."""
    aliases = aliases or AliasTable({})
    if settings.site.as_of:
        as_of = PgnDate.parse(settings.site.as_of)
    else:
        dated = [g.date for g in games if g.date.year is not None]
        as_of = max(dated, key=lambda d: d.sort_key) if dated else PgnDate(None)
    cache = Memo()
    if rows is not None and store is not None:  # a site made from rows in memory
        write_store(store, move_table(rows), {})
    counts = store_facts(store) if store is not None else {}
    names = {g.white for g in games} | {g.black for g in games}
    events = {event_key(g) for g in games}
    facts = {
        "games": len(games),
        "analysed_games": len(analysed),
        "analysed_moves": counts.get("moves", 0),
        "positions": stats.positions,
        "negative_deltas": counts.get("negative_deltas", 0),
        "mean_nodes": counts.get("mean_nodes"),
        "failed": len(stats.failed),
        "name_groups": near_duplicates(
            Counter(g.white for g in games) + Counter(g.black for g in games), aliases
        ),
    }
    return SiteData(
        settings=settings,
        games=games,
        problems=sorted(problems),
        as_of=as_of,
        spec=spec,
        game_store=game_store,
        analysed=analysed,
        not_analysed=not_analysed,
        player_slugs=unique_slugs(names, aliases.listed, previous_slugs),
        event_slugs=unique_slugs(events),
        state=BuildState(facts=facts),
        cache=cache,
        elos=fill_elos(games, settings.results.elo_fill_months, event_key),
        partitions=Partitions(store, cache) if store is not None else None,
    )


def write_moves(
    store: MoveStore,
    games: list[GameRecord],
    complete: set[str],
    plies: PlyKeys,
    spec: AnalysisSpec,
    cache: EvalCache,
    mate_cp: int,
    not_analysed: dict[str, str],
    build_cache: BuildCache,
    row_keys: Mapping[str, str],
) -> set[str]:
    """The move store as of these games: the rows of the games not ``complete`` are made
    (:func:`gather_moves`), then every partition whose games or rows changed is written
    again, a partition's rows at a time; the others keep their files. Returns the analysed
    games."""
    writer = PartitionWriter(store)

    def gather(these: list[GameRecord], keep: PartitionWriter, workers: int = 1) -> set[str]:
        return gather_moves(
            these, plies, spec, cache, mate_cp, not_analysed, build_cache, row_keys,
            keep.add, keep.add_table, workers,
        )  # fmt: skip

    try:
        fresh = [g for g in games if g.game_id not in complete]
        analysed = complete | gather(fresh, writer, processes())
        n = store.partitions
        members: dict[int, dict[str, list[str]]] = {}
        for g in games:
            if g.game_id in analysed:
                for part in {partition_of(g.white, n), partition_of(g.black, n)}:
                    members.setdefault(part, {})[g.game_id] = [row_keys[g.game_id]]
        keys = {part: store.partition_keys(ids) for part, ids in members.items()}
        changed = {part: k for part, k in keys.items() if store.current(part) != k}

        def rewrite(writer: PartitionWriter, complete: set[str], reuse: bool) -> set[int]:
            """Write the changed partitions: a partition keeps, from its current file (with
            ``reuse``), the rows of its games whose rows are unchanged (a ``complete`` game
            of the same row key); the rows of the other ``complete`` games are read from the
            build cache."""
            from_file: dict[int, set[str]] = {}
            for part in changed:
                old = store.members(part) if reuse else {}
                from_file[part] = {
                    gid
                    for gid, (key,) in members[part].items()
                    if gid in complete and old.get(gid) == key
                }
                writer.keep(part, from_file[part])
            again = [
                g
                for g in games
                if g.game_id in complete
                and any(
                    g.game_id not in from_file[p]
                    for p in {partition_of(g.white, n), partition_of(g.black, n)}
                    if p in changed
                )
            ]
            gather(again, writer)
            # A partition needs a move to have a file.
            return writer.finish(
                changed,
                {part: {gid: ks[0] for gid, ks in members[part].items()} for part in changed},
            )

        try:
            written = rewrite(writer, complete, reuse=True)
        except UnreadablePartition as exc:
            # The new games' rows went with the writer, into the build cache too: every
            # changed partition is made again from the build cache.
            warn(f"{exc}; its rows are read again from the build cache")
            writer = PartitionWriter(store)
            written = rewrite(writer, analysed, reuse=False)
    finally:
        writer.close()
    kept = sorted(part for part in keys if part in written or part not in changed)
    for part in kept:
        store.keys[part] = keys[part]
    store.commit(kept)
    return analysed


def write_store(store: MoveStore, moves: pd.DataFrame, row_keys: Mapping[str, str]) -> None:
    """A whole move table (a small site's, a test's) into ``store``'s partitions; a partition
    whose games and rows (``row_keys``) are unchanged keeps its file."""
    parts: list[int] = []
    if not moves.empty:
        part_of = {p: partition_of(p, store.partitions) for p in pd.unique(moves["player"])}
        where = moves["player"].map(part_of).to_numpy()
        groups: dict[Any, Any] = pd.Series(where).groupby(where).indices
        for part in sorted(int(p) for p in groups):
            rows = moves.iloc[groups[part]]
            ids = pd.unique(rows["game_id"]).tolist()
            key = store.partition_keys({gid: [row_keys.get(gid, "")] for gid in ids})
            if any(gid not in row_keys for gid in ids):  # no keys: the rows' own digest
                key = store.partition_keys({key: [table_digest(rows)]})
            if store.current(part) != key:
                store.write(part, key, rows.reset_index(drop=True))
            else:
                store.keys[part] = key
            parts.append(part)
    store.commit(parts)


def table_digest(rows: pd.DataFrame) -> str:
    """Digest of move rows' content (their Arrow form)."""
    return store_digest(to_arrow(rows))


def store_facts(store: MoveStore) -> dict[str, Any]:
    """The build facts of the analysed moves: how many, how many with a negative error, and
    the mean nodes searched per analysed move. Each partition file carries its own counts,
    so no move is read."""
    moves = negative = nodes = 0
    for part in store.parts():
        found = store.facts(part)
        moves += found["moves"]
        negative += found["negative_deltas"]
        nodes += found["nodes"]
    return {
        "moves": moves,
        "negative_deltas": negative,
        "mean_nodes": nodes / moves if moves else None,
    }
