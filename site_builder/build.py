"""The one orchestrator: ingest → analysis → metrics → render → output."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import fnmatch
import gc
import time
from collections import Counter
from collections.abc import Callable, Mapping
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import chess
from threadpoolctl import threadpool_limits  # type: ignore[import-untyped]
from tqdm import tqdm

if TYPE_CHECKING:
    from site_builder.analysis.dask_backend import DaskPool

from site_builder import __version__
from site_builder.analysis import exchange
from site_builder.analysis.cache import IMPORTED_PREFIX, EvalCache
from site_builder.analysis.engine import engine_name, open_engine, resolve_engine
from site_builder.analysis.pool import LocalPool, PoolStats, default_workers
from site_builder.analysis.positions import Ply, analysed_plies, chunked, game_plies, missing_tasks
from site_builder.analysis.spec import AnalysisSpec, engine_identity
from site_builder.config import Settings
from site_builder.errors import SiteBuilderError
from site_builder.families import all_families
from site_builder.forked import fork_pool, keep, processes
from site_builder.frames import forget_memos
from site_builder.incremental import (
    BuildCache,
    code_digest,
    collector_paused,
    digest,
    explain_changes,
)
from site_builder.ingest.names import AliasTable, near_duplicates
from site_builder.ingest.pgn import IngestResult, read_collection
from site_builder.metrics.elo_fill import fill_elos
from site_builder.metrics.moves import move_row, move_table
from site_builder.model import GameRecord, PgnDate, Problem
from site_builder.render.output import (
    WorkerHooks,
    WriteStats,
    asset_files,
    templates_digest,
    write_site,
)
from site_builder.render.slugs import unique_slugs
from site_builder.render.writer import (
    WORK,
    commit_changes,
    environment,
    recover_output,
    staging_dir,
)
from site_builder.sitedata import Family, SiteData, event_key
from site_builder.targets import OUTPUT_RECORD, check_location, output_record

Echo = Callable[[str], None]


@dataclass
class BuildStats:
    games: int = 0
    files: int = 0
    problems: dict[str, int] = field(default_factory=dict)
    analysed_games: int = 0
    positions: int = 0  # unique positions the site needs
    cache_hits: int = 0  # of those, read from the evaluation cache
    reused: int = 0  # of those, in games whose move rows the build cache kept
    analysed: int = 0  # positions sent to an engine
    searches: int = 0
    engine_seconds: float = 0.0
    failed: list[tuple[str, str]] = field(default_factory=list)
    imported: int = 0
    pages: int = 0
    seconds: dict[str, float] = field(default_factory=dict)
    #: Why this build differs from the last one (``--explain``).
    explanation: list[str] = field(default_factory=list)
    written: WriteStats | None = None
    #: Seconds each recomputed metric family took.
    family_seconds: dict[str, float] = field(default_factory=dict)
    #: Metric families recomputed (the others were unchanged and reused).
    recomputed: list[str] = field(default_factory=list)
    #: family → players whose per-player numbers were recomputed.
    recomputed_players: dict[str, set[str]] = field(default_factory=dict)
    #: time class → (first game re-rated, games) of each sequential rating run this build.
    elo_resumed: dict[str, tuple[int, int]] = field(default_factory=dict)
    #: metric family (and kind of group) → groups computed and reused from the last build
    group_counts: dict[str, dict[str, int]] = field(default_factory=dict)


def default_cache_dir(content_dir: Path) -> Path:
    return content_dir.resolve().parent / ".cache" / "analysis"


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


def count_cached(
    plies_by_game: dict[str, list[Ply]], spec: AnalysisSpec, cache: EvalCache, stats: BuildStats
) -> None:
    """Positions needed and found, when nothing may be analysed (imported evaluations)."""
    wanted = [(p.position, p.played) for plies in plies_by_game.values() for p in plies]
    _tasks, hits = missing_tasks(wanted, spec, cache)
    stats.positions = len({pos for pos, _ in wanted})
    stats.cache_hits = hits


def run_analysis(
    plies_by_game: dict[str, list[Ply]],
    spec: AnalysisSpec,
    settings: Settings,
    cache: EvalCache,
    engine_path: str,
    stats: BuildStats,
    progress: bool,
    scheduler: str | None = None,
    complete: set[str] | None = None,
) -> None:
    """Analyse every missing position. Games in ``complete`` are known to be fully cached."""
    complete = complete or set()
    needed = {p.position for plies in plies_by_game.values() for p in plies}
    wanted = [
        (p.position, p.played)
        for gid, plies in plies_by_game.items()
        if gid not in complete
        for p in plies
    ]
    tasks, hits = missing_tasks(wanted, spec, cache)
    stats.positions = len(needed)
    stats.cache_hits = hits
    stats.reused = len(needed - {position for position, _ in wanted})
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
    stats.analysed = pool_stats.positions
    stats.searches = pool_stats.searches
    stats.engine_seconds = pool_stats.engine_seconds
    stats.failed = pool_stats.failed


def gather_moves(
    games: list[GameRecord],
    plies_by_game: dict[str, list[Ply]],
    spec: AnalysisSpec,
    cache: EvalCache,
    mate_cp: int,
    not_analysed: dict[str, str],
    build_cache: BuildCache | None,
    fingerprints: dict[str, str],
) -> tuple[list[dict[str, Any]], set[str]]:
    """Move rows of every fully analysed game; the others get a reason in ``not_analysed``."""
    rows: list[dict[str, Any]] = []
    done: set[str] = set()
    for game in games:
        key = rows_key(
            fingerprints[game.game_id], spec, mate_cp, plies_by_game[game.game_id], cache
        )
        if build_cache is not None:
            cached = build_cache.get(key)
            if cached is not None:
                rows.extend(cached)
                done.add(game.game_id)
                continue
        game_rows = []
        board = chess.Board()
        replayed = 0
        for ply in plies_by_game[game.game_id]:
            lines = cache.lookup(spec, ply.position)
            if lines is None:
                break
            in_lines = any(line[0] == ply.played for line in lines["lines"])
            single = None if in_lines else cache.lookup(spec, ply.position, ply.played)
            if not in_lines and single is None:
                lines = None
                break
            row = move_row(game, ply, lines, single, mate_cp)
            while replayed < ply.ply:  # the board before this ply, for the best move's SAN
                board.push(chess.Move.from_uci(game.moves[replayed]))
                replayed += 1
            row["best_san"] = board.san(chess.Move.from_uci(row["best"])) if row["best"] else "?"
            game_rows.append(row)
        else:
            rows.extend(game_rows)
            done.add(game.game_id)
            if build_cache is not None:
                build_cache.set(key, game_rows)
            continue
        not_analysed[game.game_id] = "analysis incomplete (a position failed or is missing)"
    return rows, done


def rows_key(
    fingerprint: str, spec: AnalysisSpec, mate_cp: int, plies: list[Ply], cache: EvalCache
) -> str:
    """Build-cache key of a game's move rows (``fingerprint``: :func:`game_fingerprint`):
    present only once the game is fully analysed. It names the evaluation cache the rows
    were read from (:meth:`EvalCache.identity`), so rows outlive neither an emptied or
    salvaged evaluation cache nor entries ``doctor --check`` removed: the build then reads,
    and analyses again what is missing, as the user who emptied the cache expects."""
    return f"rows|{fingerprint}|{spec.key}|{mate_cp}|{len(plies)}|{cache.identity()}"


def game_fingerprint(game: GameRecord) -> str:
    """Everything of a game that a move row or a ply depends on."""
    return digest(
        [
            game.game_id,
            game.white,
            game.black,
            game.white_elo,
            game.black_elo,
            str(game.date),
            game.time_class,
            game.moves,
            game.sans,
        ]
    )


def fingerprint_of(site: SiteData, game: GameRecord) -> str:
    """:func:`game_fingerprint`, computed once per build (kept in ``site.fingerprints``)."""
    found = site.fingerprints.get(game.game_id)
    if found is None:
        found = site.fingerprints[game.game_id] = game_fingerprint(game)
    return found


def cached_plies(
    games: list[GameRecord],
    keys_from: dict[str, int | None],
    build_cache: BuildCache | None,
    fingerprints: dict[str, str],
) -> dict[str, list[Ply]]:
    out = {}
    for g in games:
        start = keys_from[g.game_id]
        key = f"plies|{fingerprints[g.game_id]}|{start}"
        found = build_cache.get(key) if build_cache is not None else None
        if found is None:
            found = game_plies(g, start)
            if build_cache is not None:
                build_cache.set(key, found)
        out[g.game_id] = found
    return out


def build_cache_dir(cache_dir: Path) -> Path:
    """The build cache lives beside the evaluation cache."""
    return cache_dir.with_name(cache_dir.name + "-build")


class _Clock:
    def __init__(self, stats: BuildStats) -> None:
        self.stats, self.last = stats, time.perf_counter()

    def lap(self, name: str) -> None:
        now = time.perf_counter()
        self.stats.seconds[name] = self.stats.seconds.get(name, 0.0) + now - self.last
        self.last = now


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

    The plies and move rows, loaded in bulk, are frozen out of the garbage collector's scans
    (``gc.freeze``) until ``gc.unfreeze()``, which :func:`build` calls at its end.
    """
    clock = _Clock(stats)
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
    with BuildCache(build_cache_dir(cache_dir)) as own_cache:
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
    clock: _Clock,
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
    with collector_paused():
        plies = cached_plies(games, keys_from, build_cache, fingerprints)
    gc.freeze()  # the plies live for the whole build (unfrozen by build at its end)
    to_analyse = {g.game_id: analysed_plies(plies[g.game_id], a.first_move) for g in chosen}
    stats.analysed_games = len(chosen)
    clock.lap("ingest")

    spec: AnalysisSpec | None = None
    rows: list[dict[str, Any]] = []
    analysed: set[str] = set()
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
            if a.source == "pgn-eval":
                count_cached(to_analyse, spec, cache, stats)
            else:
                mate_cp = settings.quality.mate_cp
                complete = {
                    gid
                    for gid, gp in to_analyse.items()
                    if rows_key(fingerprints[gid], spec, mate_cp, gp, cache) in build_cache
                }
                run_analysis(
                    to_analyse,
                    spec,
                    settings,
                    cache,
                    engine_path,
                    stats,
                    progress,
                    scheduler,
                    complete,
                )
            echo(
                f"Analysis ({spec.describe()}): {stats.positions} positions needed, "
                f"{stats.reused} reused from the last build, "
                f"{stats.cache_hits} from the evaluation cache, {stats.analysed} analysed"
                + (f", {len(stats.failed)} failed" if stats.failed else "")
                + "."
            )
            clock.lap("analysis")
            if analyse_only:
                return None
            with collector_paused():
                rows, analysed = gather_moves(
                    chosen,
                    to_analyse,
                    spec,
                    cache,
                    settings.quality.mate_cp,
                    not_analysed,
                    build_cache,
                    fingerprints,
                )
            gc.freeze()
    elif analyse_only:
        echo("No games to analyse.")
        return None
    failed_problems = failed_positions_report(stats.failed, chosen, to_analyse)
    site = make_site(
        settings,
        games,
        result.problems + failed_problems,
        spec,
        plies,
        rows,
        analysed,
        not_analysed,
        stats,
        AliasTable.load(content_dir / settings.content.aliases),
        previous_slugs,
    )
    site.fingerprints = fingerprints
    clock.lap("moves")
    return site


def failed_positions_report(
    failed: list[tuple[str, str]],
    games: list[GameRecord],
    plies: dict[str, list[Ply]],
) -> list[Problem]:
    """One report line per game that contains a position the engine could not analyse."""
    reasons = dict(failed)
    out = []
    for game in games:
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


#: Settings sections each family's numbers depend on, besides [site] and [analysis]
#: (a family not listed depends on every section). Results of other families that a
#: family reads are tracked as it runs.
FAMILY_SETTINGS: dict[str, tuple[str, ...]] = {
    "quality": ("quality",),
    "results": ("results", "time_control"),
    "conformance": ("conformance", "content", "time_control"),
    "intrinsic": ("intrinsic",),
    "bayesian": ("bayesian", "intrinsic"),
    "agreement": (),
    "core": (),
}


class _RecordingResults(dict[str, Any]):
    """site.results that remembers which other families' results a family read."""

    def __init__(self, data: dict[str, Any]) -> None:
        super().__init__(data)
        self.read: set[str] = set()

    def __getitem__(self, key: str) -> Any:
        self.read.add(key)
        return super().__getitem__(key)

    def get(self, key: str, default: Any = None) -> Any:
        self.read.add(key)
        return super().get(key, default)


def compute_metrics(
    site: SiteData,
    families: list[Family],
    build_cache: BuildCache | None = None,
    data_key: str = "",
    seconds: dict[str, float] | None = None,
    workers: int = 1,
) -> list[str]:
    """Compute every family; returns the names of those actually recomputed.

    With a build cache, a family whose code, settings sections, data (``data_key``) and the
    results it read from other families are unchanged since the last build is not recomputed.
    With ``workers`` > 1, the families marked ``in_worker`` are computed in a forked process
    while this one computes the families listed before them.
    Linear algebra runs on one thread: a multi-threaded BLAS sums in an order that depends on
    the machine's cores, which changed last digits of the pages from one machine to another.
    """
    with threadpool_limits(limits=1, user_api="blas"):
        return _compute_metrics(site, families, build_cache, data_key, seconds, workers)


@dataclass
class _Metrics:
    """The state of one compute_metrics call (a forked worker inherits it)."""

    site: SiteData
    build_cache: BuildCache | None
    data_key: str
    code: str
    sections: list[str]
    keys: dict[str, str] = field(default_factory=dict)
    fresh: set[str] = field(default_factory=set)
    seconds: dict[str, float] = field(default_factory=dict)

    def run(self, fam: Family) -> None:
        """``fam``'s result into ``site.results``: the last build's when nothing it depends
        on changed, else computed (and kept in the build cache)."""
        site, build_cache, keys = self.site, self.build_cache, self.keys
        used = ("site", "analysis", *FAMILY_SETTINGS.get(fam.name, tuple(self.sections)))
        own = digest(
            [
                self.code,
                fam.name,
                {s: site.settings.digest(s) for s in sorted(set(used))},
                self.data_key,
            ]
        )
        slot = f"family|{fam.name}"
        # The keys apart from the result: a changed family never reads its old result.
        head = build_cache.get(f"family-key|{fam.name}") if build_cache is not None else None
        if (
            head is not None
            and head["own"] == own
            and all(keys.get(d) == k for d, k in head["deps"].items())
        ):
            memo = build_cache.get(slot) if build_cache is not None else None
            if memo is not None and memo["key"] == head["key"]:
                site.results[fam.name] = memo["result"]
                keys[fam.name] = memo["key"]
                return
        recording = _RecordingResults(site.results)
        site.results = recording
        clock = time.perf_counter()
        try:
            result = fam.compute(site)
        except Exception as exc:
            _check_in_worker(fam, recording.read, exc)
            raise
        finally:
            site.results = dict(recording)
        self.seconds[fam.name] = time.perf_counter() - clock
        site.results[fam.name] = result
        _check_in_worker(fam, recording.read)
        deps = {d: keys.get(d, "") for d in sorted(recording.read - {fam.name})}
        keys[fam.name] = digest([own, deps])
        self.fresh.add(fam.name)
        if build_cache is not None:
            # An unpicklable result is simply not memoised.
            with contextlib.suppress(Exception):
                build_cache.set(slot, {"key": keys[fam.name], "result": result})
                build_cache.set(
                    f"family-key|{fam.name}", {"own": own, "deps": deps, "key": keys[fam.name]}
                )


def _check_in_worker(fam: Family, read: set[str], exc: Exception | None = None) -> None:
    """A family marked ``in_worker`` that read other families' results (which a worker does
    not have) is a programming error, found in one process as in several."""
    if fam.in_worker and read - {fam.name}:
        others = sorted(read - {fam.name})
        raise RuntimeError(f"family {fam.name} is computed in a worker but read {others}") from exc


@dataclass
class _Aside:
    """What a worker sends back: the results, keys and timings of its families and what
    their computation noted on the site."""

    results: dict[str, Any]
    keys: dict[str, str]
    fresh: set[str]
    seconds: dict[str, float]
    recomputed_players: dict[str, set[str]]
    group_counts: dict[str, dict[str, int]]
    facts: dict[str, Any]


#: The metrics state and the families a forked worker computes.
_ASIDE: tuple[_Metrics, list[Family]] | None = None


def _compute_aside() -> _Aside:
    assert _ASIDE is not None
    state, families = _ASIDE
    site = state.site
    if isinstance(state.build_cache, BuildCache):
        keep(state.build_cache)
        state.build_cache = site.memo = BuildCache(state.build_cache.directory)
    facts = dict(site.facts)
    for fam in families:
        state.run(fam)
    names = {f.name for f in families}
    return _Aside(
        results={n: site.results[n] for n in names},
        keys={n: state.keys[n] for n in names},
        fresh=state.fresh & names,
        seconds={n: v for n, v in state.seconds.items() if n in names},
        recomputed_players=site.recomputed_players,
        group_counts=site.group_counts,
        facts={k: v for k, v in site.facts.items() if k not in facts or facts[k] is not v},
    )


def _compute_metrics(
    site: SiteData,
    families: list[Family],
    build_cache: BuildCache | None,
    data_key: str,
    seconds: dict[str, float] | None,
    workers: int = 1,
) -> list[str]:
    global _ASIDE
    state = _Metrics(
        site,
        build_cache,
        data_key,
        site.code or code_digest(),
        [f.name for f in dataclasses.fields(site.settings)],
    )
    aside = [f for f in families if f.in_worker]
    if workers > 1 and aside:
        first = families.index(aside[0])
        if families[first : first + len(aside)] != aside:
            raise ValueError("the families computed in a worker must be listed together")
        _ASIDE = (state, aside)
        try:
            with fork_pool(1) as pool:
                future = pool.submit(_compute_aside)
                # An error here ends the worker at once (fork_pool): a bad setting is not
                # reported after the worker's families.
                for fam in families[:first]:
                    state.run(fam)
                try:
                    got: _Aside | None = future.result()
                except BrokenProcessPool:  # the worker died: its families here
                    got = None
        finally:
            _ASIDE = None
        if got is None:
            for fam in aside:
                state.run(fam)
        else:
            site.results.update(got.results)
            state.keys.update(got.keys)
            state.fresh |= got.fresh
            state.seconds.update(got.seconds)
            for name, players in got.recomputed_players.items():
                site.recomputed_players.setdefault(name, set()).update(players)
            for name, counts in got.group_counts.items():
                site.group_counts.setdefault(name, counts)
            site.facts.update(got.facts)
        for fam in families[first + len(aside) :]:
            state.run(fam)
    else:
        for fam in families:
            state.run(fam)
    if seconds is not None:
        seconds.update(state.seconds)
    return [f.name for f in families if f.name in state.fresh]


@dataclass
class RenderResult:
    pages: int
    written: WriteStats


def render_site(
    site: SiteData,
    families: list[Family],
    output_dir: Path,
    old_digests: dict[str, str] | None = None,
    bytecode_dir: Path | None = None,
    old_sets: dict[str, tuple[str, list[str]]] | None = None,
    workers: int = 1,
    old_files: set[str] | None = None,
) -> tuple[RenderResult, dict[str, Any]]:
    """Write the new and changed files into a staging folder and move them into place.

    Pages whose inputs match ``old_digests`` (from the last build) are kept, not rendered;
    page sets whose key matches ``old_sets`` are kept without being made; the rest are made
    and rendered in ``workers`` processes. Only ``old_files`` (the previous build's, by
    default those on its record in ``output_dir``) are replaced or removed. Returns the
    result and what the next build compares with: {"pages": digests, "page_sets": keys}.
    """
    templates = templates_digest()
    site.templates = templates
    site.jinja = env = environment(bytecode_dir)
    items = [p for fam in families for p in fam.pages(site)]
    staging = staging_dir(output_dir)  # on the output's file system: moves are renames
    nav = [item for fam in families for item in fam.nav]
    common = {
        "site": site.settings.site,
        "settings": site.settings,
        "nav": nav,
        "version": __version__,
    }
    shared = digest([templates, site.code or code_digest(), repr(common)])
    written, digests, sets = write_site(
        items,
        asset_files(),
        staging,
        common,
        output_dir,
        old_digests or {},
        shared,
        bytecode_dir,
        old_sets,
        env,
        workers,
        _render_worker_hooks(site),
        old_files,
    )
    if commit_changes(staging, output_dir, written.changed, written.removed, written.files):
        written.changed = sorted([*written.changed, OUTPUT_RECORD])
    if site.memo is not None and site.new_fragments:
        with site.memo.transact():  # one commit for the fragments rendered in this build
            for entry, html in site.new_fragments.items():
                site.memo.set(entry, html)
    return RenderResult(written.pages, written), {"pages": digests, "page_sets": sets}


def _render_worker_hooks(site: SiteData) -> WorkerHooks:
    """A forked render worker reads the build cache through its own connection (an SQLite
    connection must not be used across a fork) and sends back the fragments it rendered."""

    def start() -> None:
        keep(site.memo)
        if isinstance(site.memo, BuildCache):
            site.memo = BuildCache(site.memo.directory)
        site.new_fragments.clear()

    def harvest() -> dict[str, Any]:
        found = dict(site.new_fragments)
        site.new_fragments.clear()
        return found

    return WorkerHooks(start, harvest, site.new_fragments.update)


#: The manifest entries every family's numbers depend on (besides code and settings).
DATA_KEYS = ("spec", "files", "players", "analysed", "problems")


def manifest_of(site: SiteData, file_shas: dict[str, str]) -> dict[str, Any]:
    """What this build was made from: compared with the last build's to skip work."""
    by_source: dict[str, list[str]] = {}
    players: dict[str, dict[str, Any]] = {}
    for g in site.games:
        by_source.setdefault(g.source, []).append(g.game_id)
        for name in (g.white, g.black):
            p = players.setdefault(name, {"games": [], "sources": {}, "fingerprints": []})
            p["games"].append(g.game_id)
            p["sources"][g.game_id] = g.source
            p["fingerprints"].append(
                fingerprint_of(site, g) + ("+" if g.game_id in site.analysed else "")
            )
    for p in players.values():
        p["digest"] = digest(sorted(p.pop("fingerprints")))
        p["games"] = sorted(p["games"])
    files = {
        src: {"sha": file_shas.get(src, ""), "games": sorted(ids)} for src, ids in by_source.items()
    }
    sections = [f.name for f in dataclasses.fields(site.settings)]
    new = {
        "code": code_digest(),
        "templates": templates_digest(),
        "spec": site.spec.key if site.spec else None,
        "settings": {s: site.settings.digest(s) for s in sections},
        "files": files,
        "players": players,
        "analysed": digest(sorted(site.analysed)),
        "problems": digest([dataclasses.astuple(p) for p in site.problems]),
    }
    new["inputs"] = digest({k: v for k, v in new.items()})
    # Not an input: the addresses the next build keeps (see render.slugs.slug_rank).
    new["player_slugs"] = dict(sorted(site.player_slugs.items()))
    return new


def _release() -> None:
    """At the end of a build: what it froze goes back to the collector, and nothing of the
    build is kept (the tables' memos would hold the site)."""
    gc.unfreeze()
    forget_memos()


def protected_folders(content_dir: Path, cache_dir: Path) -> dict[str, Path]:
    """The folders no output or publish target may be, hold or lie in."""
    return {
        "content": content_dir,
        "evaluation cache": cache_dir,
        "build cache": build_cache_dir(cache_dir),
    }


def _legacy_files(manifest: dict[str, Any]) -> set[str]:
    """The files a build of an earlier version (before the output record) wrote, as its
    manifest in the build cache lists them: its pages, page sets and the assets."""
    files = set(manifest.get("pages") or {})
    for _key, paths in (manifest.get("page_sets") or {}).values():
        files.update(paths)
    return files | set(asset_files()) if files else set()


def build(
    content_dir: Path,
    output_dir: Path,
    settings: Settings,
    *,
    cache_dir: Path | None = None,
    analyse_only: bool = False,
    progress: bool = True,
    echo: Echo = print,
    scheduler: str | None = None,
) -> BuildStats:
    """The whole build. Skips metrics and pages when nothing changed since the last one."""
    stats = BuildStats()
    cache_dir = cache_dir or default_cache_dir(content_dir)
    if not analyse_only:  # refused before anything is touched; then a failed build undone
        check_location(output_dir, "output", protected_folders(content_dir, cache_dir))
        recover_output(output_dir)
        if not (output_dir / OUTPUT_RECORD).is_file() and not (output_dir / "index.html").exists():
            output_record(output_dir, WORK)  # refuses a non-empty folder that is not a site
    with BuildCache(build_cache_dir(cache_dir)) as build_cache, contextlib.ExitStack() as stack:
        manifest_key = f"manifest|{output_dir.resolve()}"
        old = build_cache.get(manifest_key) or {}
        previous = set()
        if not analyse_only:
            recorded = (output_dir / OUTPUT_RECORD).is_file()
            previous = output_record(output_dir, WORK, None if recorded else _legacy_files(old))
        # The games, plies and move table live for the whole build: frozen out of the garbage
        # collector's scans as they are loaded (gc.freeze), which would walk millions of them
        # again and again, and unfrozen at the end.
        stack.callback(_release)
        site = prepare(
            content_dir,
            settings,
            stats,
            cache_dir=cache_dir,
            analyse_only=analyse_only,
            progress=progress,
            echo=echo,
            scheduler=scheduler,
            build_cache=build_cache,
            previous_slugs=old.get("player_slugs") if not analyse_only else None,
        )
        if site is None:
            return stats
        # From here on the build makes next to no cyclic garbage (none in the metrics of the
        # demo, 1,400 objects in its render), so the collector stays off until the end.
        stack.enter_context(collector_paused())
        clock = _Clock(stats)
        new = manifest_of(site, build_cache.file_shas)
        stats.explanation = explain_changes(old, new)
        if (
            old.get("inputs") == new["inputs"]
            and (output_dir / "index.html").is_file()
            and (output_dir / OUTPUT_RECORD).is_file()
        ):
            echo(f"Nothing changed since the last build: {output_dir} is up to date.")
            return stats
        families = all_families()
        site.memo = build_cache
        # One code digest for the whole build (the manifest's).
        code = new["code"]
        site.code = code
        site.player_keys = {
            name: digest([p["digest"], new["spec"], str(site.as_of), code])
            for name, p in new["players"].items()
        }
        site.game_keys = {
            g.game_id: digest(
                [fingerprint_of(site, g), g.game_id in site.analysed, new["spec"], code]
            )
            for g in site.games
        }
        stats.recomputed = compute_metrics(
            site,
            families,
            build_cache,
            digest([new[k] for k in DATA_KEYS]),
            stats.family_seconds,
            processes(),
        )
        stats.recomputed_players = site.recomputed_players
        stats.group_counts = site.group_counts
        stats.elo_resumed = site.facts.get("elo_resumed", {})
        clock.lap("metrics")
        result, rendered = render_site(
            site,
            families,
            output_dir,
            old.get("pages"),
            build_cache_dir(cache_dir) / "jinja",
            old.get("page_sets"),
            processes(),
            previous,
        )
        build_cache.set(manifest_key, {**new, **rendered})
        clock.lap("render")
    stats.pages = result.pages
    stats.written = result.written
    w = result.written
    echo(
        f"Wrote {output_dir}: {result.pages} pages, {w.rendered} rendered, "
        f"{len(w.changed)} files changed, {w.unchanged} unchanged, {len(w.removed)} removed."
    )
    return stats


def make_site(
    settings: Settings,
    games: list[GameRecord],
    problems: list[Problem],
    spec: AnalysisSpec | None,
    plies: dict[str, list[Ply]],
    rows: list[dict[str, Any]],
    analysed: set[str],
    not_analysed: dict[str, str],
    stats: BuildStats,
    aliases: AliasTable | None = None,
    previous_slugs: Mapping[str, str] | None = None,
) -> SiteData:
    """The site's data; ``aliases`` (the alias table) and ``previous_slugs`` (the output's
    last build) decide who keeps a shared plain slug, and the alias table suggests alias
    lines for names that normalise alike (see render.slugs)."""
    aliases = aliases or AliasTable({})
    if settings.site.as_of:
        as_of = PgnDate.parse(settings.site.as_of)
    else:
        dated = [g.date for g in games if g.date.year is not None]
        as_of = max(dated, key=lambda d: d.sort_key) if dated else PgnDate(None)
    moves = move_table(rows)
    names = {g.white for g in games} | {g.black for g in games}
    events = {event_key(g) for g in games}
    facts = {
        "games": len(games),
        "analysed_games": len(analysed),
        "analysed_moves": len(moves),
        "positions": stats.positions,
        "negative_deltas": int((moves["raw_delta"] < 0).sum()) if len(moves) else 0,
        "mean_nodes": _mean_nodes(moves),
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
        plies=plies,
        moves=moves,
        analysed=analysed,
        not_analysed=not_analysed,
        player_slugs=unique_slugs(names, aliases.listed, previous_slugs),
        event_slugs=unique_slugs(events),
        facts=facts,
        elos=fill_elos(games, settings.results.elo_fill_months, event_key),
    )


def _mean_nodes(moves: Any) -> float | None:
    """Mean nodes searched per analysed position (deterministic, unlike seconds)."""
    if len(moves) == 0:
        return None
    return float(moves.drop_duplicates("position")["nodes"].mean())
