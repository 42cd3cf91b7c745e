"""What each CLI command does, in terms of the build module."""

from __future__ import annotations

import argparse
import contextlib
import errno
import functools
import http.server
import sys
from pathlib import Path

from site_builder import build as builder
from site_builder.analysis import exchange, stage
from site_builder.analysis.cache import EvalCache
from site_builder.analysis.engine import INSTALL_HINT, resolve_engine
from site_builder.analysis.positions import analysed_plies, game_plies
from site_builder.config import Settings
from site_builder.errors import EngineNotFoundError
from site_builder.stats import BuildStats


def _cache_dir(args: argparse.Namespace) -> Path:
    return args.cache or stage.default_cache_dir(args.content)


def build(args: argparse.Namespace, settings: Settings) -> int:
    stats = builder.build(
        args.content,
        args.output,
        settings,
        cache_dir=_cache_dir(args),
        scheduler=args.scheduler,
        progress=not args.no_progress and sys.stderr.isatty(),
    )
    if args.explain:
        print("Why:")
        for line in stats.explanation:
            print(f"  {line}")
        for cls, (first, total) in sorted(stats.elo_resumed.items()):
            if total:
                print(
                    f"  {cls} ratings: games {first + 1}–{total} re-rated in date order, "
                    f"the first {first} taken over from the last build"
                )
        if stats.recomputed_players:
            print(
                "  players recomputed per family: "
                + ", ".join(
                    f"{fam} {len(names)}" for fam, names in sorted(stats.recomputed_players.items())
                )
            )
        if stats.partitions:
            print(
                "  partitions recomputed per work: "
                + ", ".join(f"{work} {n}" for work, n in stats.partitions.items())
            )
        for kind, n in sorted(stats.group_counts.items()):
            print(f"  {kind} groups: {n['computed']} computed, {n['reused']} reused")
        if stats.written is not None:
            w = stats.written
            print(
                f"  pages: {w.rendered} rendered, {w.reused} reused unchanged inputs, "
                f"{len(w.changed)} files written, {len(w.removed)} removed"
            )
            for path in w.changed[:50]:
                print(f"    written: {path}")
            for path in w.removed[:50]:
                print(f"    removed: {path}")
    _print_timing(stats)
    return _analysis_status(stats, args.output / "report.html")


def analyse(args: argparse.Namespace, settings: Settings) -> int:
    stats = builder.build(
        args.content,
        Path("output"),
        settings,
        cache_dir=_cache_dir(args),
        analyse_only=True,
        scheduler=args.scheduler,
        progress=not args.no_progress and sys.stderr.isatty(),
    )
    _print_timing(stats)
    return _analysis_status(stats, None)


def _analysis_status(stats: BuildStats, report: Path | None) -> int:
    """Exit status 1 when positions could not be analysed (their games are left out)."""
    if not stats.failed:
        return 0
    where = f"; {report} lists them" if report is not None else ""
    print(
        f"site-builder: {len(stats.failed)} positions could not be analysed and their games "
        f"are not rated{where}. The first: {stats.failed[0][0]}: {stats.failed[0][1]}. "
        "Run the command again to retry them, or check the engine with `site-builder doctor`.",
        file=sys.stderr,
    )
    return 1


def _print_timing(stats: BuildStats) -> None:
    parts = ", ".join(f"{k} {v:.1f} s" for k, v in stats.seconds.items())
    if parts:  # none when the build found nothing to do
        print(f"Time: {parts}.")
    if stats.analysed:
        print(f"Engine: {stats.searches} searches, {stats.engine_seconds:.0f} s of engine time.")


def recover_unless_building(output: Path) -> None:
    """A build killed halfway in ``output``: the previous site put back, whole. A build still
    running there (it holds the folder) is left alone."""
    from site_builder.render.writer import recover_output
    from site_builder.targets import FolderInUseError, held

    with contextlib.suppress(FolderInUseError), held(output, "output folder", make=False):
        recover_output(output)


def serve(output: Path, bind: str, port: int) -> int:
    from site_builder.targets import check_location

    check_location(output, "output", {})
    recover_unless_building(output)
    if not (output / "index.html").exists():
        print(
            f"site-builder: {output}/index.html not found; run `site-builder build` first.",
            file=sys.stderr,
        )
        return 2
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(output))
    try:
        server = http.server.ThreadingHTTPServer((bind, port), handler)
    except OSError as exc:
        why = {
            errno.EADDRINUSE: "is already in use (another server, or an earlier `serve`?)",
            errno.EACCES: "needs administrator rights (ports below 1024)",
            errno.EADDRNOTAVAIL: f"cannot be opened: {bind} is not an address of this machine",
        }.get(exc.errno or 0, f"cannot be opened ({exc.strerror or exc})")
        print(
            f"site-builder: error: port {port} on {bind} {why}. "
            f"Choose another port, e.g. `site-builder serve --port {port + 1 if port else 8001}`.",
            file=sys.stderr,
        )
        return 2
    with server as httpd:
        host, real_port = str(httpd.server_address[0]), httpd.server_address[1]
        print(f"Serving {output} at http://{host}:{real_port}/ (Ctrl-C to stop)", flush=True)
        with contextlib.suppress(KeyboardInterrupt):
            httpd.serve_forever()
    return 0


def publish(args: argparse.Namespace) -> int:
    from site_builder.publish import publish as copy_site

    output, target = args.output, args.to
    protected = builder.protected_folders(args.content, _cache_dir(args))
    stats = copy_site(output, target, args.delete, args.force, protected)
    print(
        f"Published {output} to {target}: {len(stats.copied)} files copied, "
        f"{stats.unchanged} unchanged, {len(stats.deleted)} deleted."
    )
    if stats.stale:
        print(
            f"{len(stats.stale)} files in {target} are no longer part of the site "
            "(publish put them there; use --delete to remove them)."
        )
    return 0


def _human(n: float) -> str:
    for unit in ("B", "KB", "MB", "GB"):
        if n < 1024:
            return f"{n:.0f} {unit}"
        n /= 1024
    return f"{n:.1f} TB"


def _check_cache(cache_dir: Path) -> int:
    """``doctor --check``: validate every evaluation, remove the invalid ones."""
    from site_builder.analysis.cache import check_cache

    if not (cache_dir / "cache.db").exists():
        print(f"Cache: {cache_dir} holds no evaluation cache; nothing to check.")
        return 0
    with EvalCache(cache_dir) as cache:
        result = check_cache(cache)
    print(f"Checked {result.entries} evaluations in {cache_dir}.")
    if not result.removed:
        print("Every evaluation is valid.")
        return 0
    for key, reason in list(result.removed.items())[:20]:
        print(f"  removed {key}: {reason}")
    if len(result.removed) > 20:
        print(f"  ... and {len(result.removed) - 20} more")
    print(
        f"Removed {len(result.removed)} invalid evaluations. The next build imports the "
        "content's analysis files again and analyses the positions still missing."
    )
    return 0


def _salvage_cache(cache_dir: Path) -> int:
    """``doctor --salvage``: a fresh cache from the readable entries of a corrupt one."""
    from site_builder.analysis.cache import salvage_cache
    from site_builder.targets import held

    if not (cache_dir / "cache.db").exists():
        print(f"site-builder: no evaluation cache at {cache_dir}; nothing to salvage.")
        return 2
    # Not while a build on this cache writes to the database it moves aside.
    with held(stage.build_cache_dir(cache_dir), "build cache", make=False):
        result = salvage_cache(cache_dir)
    print(
        f"Salvaged {result.copied} valid evaluations into a fresh cache at {cache_dir} "
        f"({result.unreadable} unreadable and {result.invalid} invalid entries left behind). "
        f"The damaged database is kept as {result.aside}; delete it when you no longer need "
        "it. The next build imports the content's analysis files again and analyses the "
        "positions still missing."
    )
    return 0


def doctor(args: argparse.Namespace, settings: Settings) -> int:
    from site_builder.analysis.cache import CacheCorruptError
    from site_builder.analysis.spec import engine_identity
    from site_builder.errors import EngineError

    if args.salvage:
        return _salvage_cache(_cache_dir(args))
    if args.check:
        return _check_cache(_cache_dir(args))
    ok = True
    print(
        f"Settings: {args.content / 'site.toml'}"
        + ("" if (args.content / "site.toml").exists() else " (not found: defaults)")
    )
    a = settings.analysis
    spec = None
    try:
        path = resolve_engine(a.engine)
        name = stage.identify_engine(path)
        binary = engine_identity(path)
        print(f"Engine: {name} at {path} (binary {binary})")
        spec = stage.make_spec(settings, name, binary)
        print(
            f"Analysis settings: {spec.describe()}, from move {a.first_move}, "
            f"classes {', '.join(a.classes)}"
        )
    except EngineNotFoundError:
        print(f"Engine: NOT FOUND at {a.engine!r}. {INSTALL_HINT}")
        ok = False
    except EngineError as exc:
        print(f"Engine: NOT WORKING: {exc}")
        ok = False
    cache_dir = _cache_dir(args)
    cache_ok = cache_dir.exists()
    if cache_dir.exists():
        try:
            with EvalCache(cache_dir) as cache:
                print(
                    f"Cache: {cache_dir} — {len(cache)} entries, {_human(cache.volume())} on disk"
                )
        except CacheCorruptError as exc:
            print(f"Cache: CORRUPT: {exc}")
            ok = cache_ok = False
    else:
        print(f"Cache: {cache_dir} (empty: created on the first build)")
    result = stage.ingest(args.content, settings)
    kinds: dict[str, int] = {}
    for p in result.problems:
        kinds[p.severity] = kinds.get(p.severity, 0) + 1
    classes: dict[str, int] = {}
    for g in result.games:
        classes[g.time_class] = classes.get(g.time_class, 0) + 1
    players = {g.white for g in result.games} | {g.black for g in result.games}
    years = sorted(g.date.year for g in result.games if g.date.year)
    print(
        f"Content: {len(result.files)} PGN files, {len(result.games)} games, "
        f"{len(players)} players"
        + (f", {years[0]}–{years[-1]}" if years else "")
        + "; "
        + ", ".join(f"{n} {k}" for k, n in sorted(classes.items()))
    )
    if kinds:
        print(
            "Problems: "
            + ", ".join(f"{n} {k}" for k, n in sorted(kinds.items()))
            + " (details on the build report page)"
        )
    if spec is not None and cache_ok:
        chosen, _ = stage.analysis_scope(result.games, settings)
        wanted = [
            (p.position, p.played)
            for g in chosen
            for p in analysed_plies(game_plies(g, a.first_move), a.first_move)
        ]
        from site_builder.analysis.positions import missing_tasks

        with EvalCache(cache_dir) as cache:
            tasks, hits = missing_tasks(wanted, spec, cache)
        print(f"Analysis coverage: {hits} positions cached, {len(tasks)} still to analyse")
    return 0 if ok else 1


def analysis(args: argparse.Namespace, settings: Settings) -> int:
    from site_builder.analysis.spec import engine_identity

    cache_dir = _cache_dir(args)
    if args.action == "import":
        with EvalCache(cache_dir) as cache:
            if args.file.suffix.lower() == ".pgn":
                games, added = exchange.import_pgn_evals(cache, args.file)
                print(
                    f"Imported {added} evaluations from the [%eval] comments of {games} games "
                    f'into {cache_dir}. Build with [analysis] source = "pgn-eval" to use '
                    "them; methods that need several lines per position (intrinsic ratings, "
                    "Bayesian skill) will say n/a."
                )
                return 0
            imported = exchange.import_analysis(cache, args.file)
        print(
            f"Imported {imported.added} new evaluations ({imported.spec.describe()}) into "
            f"{cache_dir}"
            + (f"; {imported.repaired} invalid cached ones replaced" if imported.repaired else "")
            + "."
        )
        if imported.rejected:
            for line, reason in imported.rejected[:10]:
                print(f"  {args.file}, line {line}: {reason}", file=sys.stderr)
            print(
                f"site-builder: {len(imported.rejected)} entries of {args.file} are invalid and "
                "were rejected (nothing of them was stored). Export the file again with a "
                "working engine.",
                file=sys.stderr,
            )
            return 1
        return 0
    path = resolve_engine(args.engine or settings.analysis.engine)
    spec = stage.make_spec(settings, stage.identify_engine(path), engine_identity(path))
    positions = None
    if not args.all_positions:
        result = stage.ingest(args.content, settings)
        chosen, _ = stage.analysis_scope(result.games, settings)
        positions = {
            p.position
            for g in chosen
            for p in analysed_plies(
                game_plies(g, settings.analysis.first_move), settings.analysis.first_move
            )
        }
    with EvalCache(cache_dir) as cache:
        n = exchange.export_analysis(cache, spec, args.file, positions)
    print(f"Exported {n} evaluations ({spec.describe()}) to {args.file}.")
    return 0


def calibrate(args: argparse.Namespace, settings: Settings) -> int:
    """Rebuild the intrinsic ratings' Elo calibration: print it, write its page and data.
    The output folder and the build cache are held by it alone while it runs, as by a
    build."""
    # The pages go into a site this tool made (or an empty folder), never elsewhere.
    with builder.held_folders(args.content, args.output, _cache_dir(args)):
        return _calibrate(args, settings)


def _calibrate(args: argparse.Namespace, settings: Settings) -> int:
    import dataclasses

    from threadpoolctl import threadpool_limits  # type: ignore[import-untyped]

    from site_builder import __version__
    from site_builder.families import all_families
    from site_builder.families.intrinsic import compute_calibration
    from site_builder.forked import processes, worker_pool
    from site_builder.render import intrinsic_pages
    from site_builder.render.writer import WORK, environment, page_bytes, write_file
    from site_builder.targets import OUTPUT_RECORD, output_record, write_record

    previous = output_record(args.output, WORK)
    changes: dict[str, object] = {}
    if args.method:
        changes["fit"] = args.method
    if args.width is not None:
        changes["milepost_width"] = args.width
    if changes:
        intrinsic = dataclasses.replace(settings.intrinsic, **changes)  # type: ignore[arg-type]
        settings = dataclasses.replace(settings, intrinsic=intrinsic)
    stats = BuildStats()
    # As in a build: the work in the build's workers, linear algebra on one thread.
    with worker_pool(processes()), threadpool_limits(limits=1, user_api="blas"):
        site = stage.prepare(
            args.content,
            settings,
            stats,
            cache_dir=_cache_dir(args),
            progress=not args.no_progress and sys.stderr.isatty(),
            scheduler=args.scheduler,
        )
        if site is None:
            return 1
        if site.partitions is not None:
            site.partitions.workers = processes()
        res = compute_calibration(site)
    site.state.results["intrinsic"] = res
    for line in intrinsic_pages.calibration_text(res, settings):
        print(line)
    families = all_families()
    common = {
        "site": settings.site,
        "settings": settings,
        "nav": [item for fam in families for item in fam.nav],
        "version": __version__,
    }
    env = environment()
    wanted = {"calibration.html", "data/calibration.csv", "data/calibration.json"}
    for page in intrinsic_pages.pages(site):
        if page.path not in wanted:
            continue
        data = page_bytes(page, env, common)
        write_file(args.output, page.path, data)
    write_record(args.output, OUTPUT_RECORD, previous | wanted)
    print(f"Wrote {', '.join(sorted(wanted))} to {args.output}.")
    return 0
