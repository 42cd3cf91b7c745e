"""The one orchestrator: ingest → analysis → metrics → render → output.

It runs the stages (:mod:`site_builder.analysis.stage`, :mod:`site_builder.families.driver`,
:mod:`site_builder.render.driver`) and, from the manifest of the last build, decides what
each must redo.
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from site_builder.analysis.stage import (
    Echo,
    build_cache_dir,
    default_cache_dir,
    fingerprint_of,
    prepare,
    quick_inputs,
    settled,
)
from site_builder.config import Settings
from site_builder.families import all_families
from site_builder.families.driver import compute_metrics
from site_builder.forked import one_process, processes, worker_pool
from site_builder.frames import forget_memos
from site_builder.incremental import (
    BuildCache,
    code_digest,
    collector_paused,
    digest,
    explain_changes,
)
from site_builder.ingest.pgn import pgn_files
from site_builder.memo import Kind, entry
from site_builder.partitions import dask_client, drop_unused
from site_builder.render.driver import NewWorkers, render_site
from site_builder.render.ledger import PageSetKeys
from site_builder.render.output import asset_files, templates_digest
from site_builder.render.writer import WORK, recover_output
from site_builder.sitedata import SiteData
from site_builder.stats import BuildStats, Clock
from site_builder.targets import OUTPUT_RECORD, check_location, held, output_record
from site_builder.updates import advance, keep, report

#: A site whose game files hold fewer bytes (about 80 games) is built in one process: the
#: workers' start (a server importing the libraries, about 1.5 s of CPU; a render worker
#: reading the site back, about 1.5 s) costs more than the work they would share.
ONE_PROCESS_BELOW_BYTES = 64 * 1024
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
    """At the end of a build: nothing of it is kept (the tables' memos would hold the site)."""
    forget_memos()


def protected_folders(content_dir: Path, cache_dir: Path) -> dict[str, Path]:
    """The folders no output or publish target may be, hold or lie in."""
    return {
        "content": content_dir,
        "evaluation cache": cache_dir,
        "build cache": build_cache_dir(cache_dir),
    }


@contextlib.contextmanager
def held_folders(content_dir: Path, output_dir: Path | None, cache_dir: Path) -> Iterator[None]:
    """For a command that changes them: the output folder (None: none) checked against the
    protected folders and held, and the build cache held (:func:`~site_builder.targets.held`)."""
    with contextlib.ExitStack() as folders:
        if output_dir is not None:
            check_location(output_dir, "output", protected_folders(content_dir, cache_dir))
            folders.enter_context(held(output_dir, "output folder"))
        folders.enter_context(held(build_cache_dir(cache_dir), "build cache"))
        yield


def _game_bytes(content_dir: Path, settings: Settings) -> int:
    return sum(p.stat().st_size for p in pgn_files(content_dir / settings.content.games))


def _legacy_files(manifest: dict[str, Any]) -> set[str]:
    """The files a build of an earlier version (before the output record) wrote, as the
    build cache lists them (its manifest, or since the pages' digests have an entry of their
    own, that entry): its pages, page sets and the assets."""
    files = set(manifest.get("pages") or ())
    page_sets = manifest.get("page_sets") or {}
    if isinstance(page_sets, PageSetKeys):
        files.update(page_sets.paths())
    else:
        for _key, paths in page_sets.values():
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
    """The whole build. Skips metrics and pages when nothing changed since the last one.
    The output folder and the build cache are held by this build alone while it runs."""
    cache_dir = cache_dir or default_cache_dir(content_dir)
    # Refused before anything is touched; then a failed build undone.
    with held_folders(content_dir, None if analyse_only else output_dir, cache_dir):
        if not analyse_only:
            recover_output(output_dir)
            if (
                not (output_dir / OUTPUT_RECORD).is_file()
                and not (output_dir / "index.html").exists()
            ):
                output_record(output_dir, WORK)  # refuses a non-empty folder that is not a site
        return _build(
            content_dir,
            output_dir,
            settings,
            cache_dir,
            analyse_only=analyse_only,
            progress=progress,
            echo=echo,
            scheduler=scheduler,
        )


def _build(
    content_dir: Path,
    output_dir: Path,
    settings: Settings,
    cache_dir: Path,
    *,
    analyse_only: bool,
    progress: bool,
    echo: Echo,
    scheduler: str | None,
) -> BuildStats:
    stats = BuildStats()
    with (
        BuildCache(build_cache_dir(cache_dir), stamp=True) as build_cache,
        contextlib.ExitStack() as stack,
    ):
        manifest_key = entry(Kind.MANIFEST, str(output_dir.resolve()))
        # The pages' digests (at 30x the demo, 170 MB as objects) are read by the render only.
        rendered_key = entry(Kind.RENDERED, str(output_dir.resolve()))
        old = build_cache.get(manifest_key) or {}
        previous = set()
        if not analyse_only:
            legacy = None
            if not (output_dir / OUTPUT_RECORD).is_file():
                listed = old if "pages" in old else build_cache.get(rendered_key) or {}
                legacy = _legacy_files(listed)
            previous = output_record(output_dir, WORK, legacy)
        quick = None
        if not analyse_only:
            quick = quick_inputs(
                content_dir, settings, cache_dir, build_cache, code_digest(), templates_digest()
            )
        if (
            quick is not None
            and old.get("quick") == quick
            and (output_dir / "index.html").is_file()
            and (output_dir / OUTPUT_RECORD).is_file()
        ):
            stats.explanation = ["nothing changed"]
            echo(f"Nothing changed since the last build: {output_dir} is up to date.")
            return stats
        stack.callback(_release)
        if _game_bytes(content_dir, settings) < ONE_PROCESS_BELOW_BYTES:
            stack.enter_context(one_process())
        # The workers of the stage's and the families' work, ended before the render.
        workers = stack.enter_context(contextlib.ExitStack())
        workers.enter_context(worker_pool(processes()))
        # Imported now, not after the analysis: a Ctrl-C that lands in an import made by
        # exec (scipy's) makes Python end by SIGINT after the build's own message.
        families = all_families()
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
        if site.game_store is not None:  # its own connection to the build cache
            stack.callback(site.game_store.close)
        # From here on the build makes next to no cyclic garbage (none in the metrics of the
        # demo, 1,400 objects in its render), so the collector stays off until the end.
        stack.enter_context(collector_paused())
        clock = Clock(stats)
        new = manifest_of(site, build_cache.file_shas)
        stats.explanation = explain_changes(old, new)
        if (
            old.get("inputs") == new["inputs"]
            and (output_dir / "index.html").is_file()
            and (output_dir / OUTPUT_RECORD).is_file()
        ):
            echo(f"Nothing changed since the last build: {output_dir} is up to date.")
            build_cache.set(manifest_key, {**old, "quick": settled(quick, cache_dir)})
            return stats
        del old
        site.cache.store = build_cache
        if site.partitions is not None:  # the families' per-partition work
            site.partitions.workers = processes()
            if scheduler:
                site.partitions.client = stack.enter_context(dask_client(scheduler))
        # One code digest for the whole build (the manifest's).
        code = new["code"]
        site.cache.code = code
        site.cache.player_keys = {
            name: digest([p["digest"], new["spec"], str(site.as_of), code])
            for name, p in new["players"].items()
        }
        site.cache.game_keys = {
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
        )
        stats.recomputed_players = site.cache.recomputed_players
        stats.group_counts = site.cache.group_counts
        if site.partitions is not None:
            stats.partitions = dict(sorted(site.partitions.computed.items()))
        stats.elo_resumed = site.state.facts.get("elo_resumed", {})
        workers.close()
        clock.lap("metrics")
        # What changed since this output folder's last build (the "What's new" pages).
        news = advance(site, build_cache, output_dir)
        site.state.results["updates"] = news
        last = build_cache.get(rendered_key) or {}
        result, rendered = render_site(
            site,
            families,
            output_dir,
            last.pop("pages", None),
            build_cache_dir(cache_dir) / "jinja",
            last.pop("page_sets", None),
            processes(),
            previous,
            NewWorkers(all_families, build_cache_dir(cache_dir)),
        )
        with build_cache.transact():
            build_cache.set(manifest_key, {**new, "quick": settled(quick, cache_dir)})
            build_cache.set(rendered_key, rendered)
        keep(news, build_cache, output_dir)
        if site.partitions is not None:
            stats.partition_results_dropped = drop_unused(
                build_cache, output_dir, site.partitions.used
            )
        clock.lap("render")
    stats.pages = result.pages
    stats.written = result.written
    w = result.written
    echo(
        f"Wrote {output_dir}: {result.pages} pages, {w.rendered} rendered, "
        f"{len(w.changed)} files changed, {w.unchanged} unchanged, {len(w.removed)} removed."
    )
    for line in report(news):
        echo(line)
    return stats
