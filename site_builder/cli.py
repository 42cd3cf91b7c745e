"""Command line: argument parsing only; the work is done by :mod:`site_builder.build`."""

from __future__ import annotations

import argparse
import errno
import shutil
import signal
import sqlite3
import sys
from concurrent.futures.process import BrokenProcessPool
from pathlib import Path
from typing import Any

from site_builder import __version__
from site_builder.config import load_settings
from site_builder.errors import SQLITE_FULL, SQLITE_UNWRITABLE, SiteBuilderError, sqlite_code

EPILOG = """\
Typical use:
  site-builder build                 analyse new positions and write the site to output/
  site-builder serve                 preview output/ at http://127.0.0.1:8000/
  site-builder doctor                check the engine, the cache and the content

Settings live in content/site.toml; command-line options override them.
Exit codes: 0 done, 1 some positions failed in the engine, 2 bad content, settings or
arguments, 74 a file or folder that cannot be written (disk full, read-only), 130 interrupted.
"""


def _content_options(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--content",
        type=Path,
        default=Path("content"),
        metavar="DIR",
        help="content folder with site.toml, aliases.toml and games/ (default: ./content)",
    )
    p.add_argument(
        "--cache",
        type=Path,
        default=None,
        metavar="DIR",
        help="evaluation cache folder (default: .cache/analysis beside the content folder)",
    )


def _analysis_options(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("analysis (override [analysis] in site.toml)")
    g.add_argument("--engine", metavar="PATH", help="UCI engine (default /usr/games/stockfish)")
    g.add_argument(
        "--workers", type=int, metavar="N", help="engine processes (default: one per core)"
    )
    lim = g.add_mutually_exclusive_group()
    lim.add_argument("--depth", type=int, metavar="D", help="fixed search depth per position")
    lim.add_argument("--nodes", type=int, metavar="N", help="fixed node count per position")
    g.add_argument("--multipv", type=int, metavar="K", help="principal lines per position")
    g.add_argument(
        "--scheduler",
        metavar="ADDRESS",
        help="run the engines on a Dask cluster, e.g. tcp://HOST:8786 "
        "(pip install 'site-builder[distributed]'); default: local processes",
    )
    p.add_argument("--no-progress", action="store_true", help="no progress bar")


def parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(
        prog="site-builder",
        description="Rate chess players by the quality of their moves and publish the "
        "ratings as a static website.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    ap.add_argument("--version", action="version", version=f"site-builder {__version__}")
    sub = ap.add_subparsers(dest="command", required=True, metavar="COMMAND")

    b = sub.add_parser(
        "build",
        help="read games, analyse new positions, compute ratings, write the site",
        description="Read every PGN under content/games, analyse positions not "
        "yet in the cache, compute every metric and write the site "
        "to the output folder. Safe to interrupt: finished analysis "
        "is kept and the next build resumes.",
    )
    _content_options(b)
    b.add_argument(
        "--output",
        type=Path,
        default=Path("output"),
        metavar="DIR",
        help="where the site is written (default: ./output)",
    )
    b.add_argument(
        "--explain",
        action="store_true",
        help="print what is rebuilt and why (new games per player, changed settings, "
        "templates, pages written)",
    )
    _analysis_options(b)

    a = sub.add_parser(
        "analyse",
        help="only fill the evaluation cache (no pages)",
        description="Analyse every position the site needs that is not cached.",
    )
    _content_options(a)
    _analysis_options(a)

    s = sub.add_parser(
        "serve",
        help="preview the built site on localhost",
        description="Serve the output folder over HTTP for a local preview. "
        "The site also works opened straight from disk (file://).",
    )
    s.add_argument("--output", type=Path, default=Path("output"), metavar="DIR")
    s.add_argument("--port", type=int, default=8000)
    s.add_argument(
        "--bind",
        default="127.0.0.1",
        help="address to listen on (default 127.0.0.1: this machine only)",
    )

    d = sub.add_parser(
        "doctor",
        help="check the engine, cache and content",
        description="Report whether the engine is found (name and version), "
        "where the cache is with its size and entry count, and "
        "what the content holds.",
    )
    _content_options(d)
    d.add_argument("--engine", metavar="PATH")
    dc = d.add_mutually_exclusive_group()
    dc.add_argument(
        "--check",
        action="store_true",
        help="check every cached evaluation (legal moves, scores, line counts) and remove "
        "the invalid ones; the next build fills the gaps",
    )
    dc.add_argument(
        "--salvage",
        action="store_true",
        help="for a corrupt evaluation cache: copy its readable, valid entries into a fresh "
        "cache and keep the damaged cache.db beside it",
    )

    pub = sub.add_parser(
        "publish",
        help="copy the built site to a folder, changed files only",
        description="Copy output/ to DIR (a web server's root, a synced or mounted folder): "
        "new and changed files are copied, identical ones left alone. For a remote host use "
        "rsync (see the README).",
    )
    pub.add_argument("--to", type=Path, required=True, metavar="DIR", help="target folder")
    pub.add_argument(
        "--output",
        type=Path,
        default=Path("output"),
        metavar="DIR",
        help="the built site (default: ./output)",
    )
    pub.add_argument(
        "--delete",
        action="store_true",
        help="delete files an earlier publish copied to DIR that the site no longer has "
        "(other files in DIR are never deleted)",
    )
    pub.add_argument(
        "--force",
        type=Path,
        metavar="DIR",
        help="publish into DIR (the --to folder again) even though it is not empty and an "
        "earlier publish did not make it, overwriting files at the site's paths",
    )
    _content_options(pub)

    x = sub.add_parser(
        "analysis",
        help="export or import evaluations",
        description="Share analysis between machines: export the cached "
        "evaluations to a compressed file, or import such a file.",
    )
    xs = x.add_subparsers(dest="action", required=True, metavar="ACTION")
    xe = xs.add_parser("export", help="write cached evaluations to FILE (.jsonl.gz)")
    xe.add_argument("file", type=Path)
    _content_options(xe)
    xe.add_argument("--engine", metavar="PATH")
    xe.add_argument(
        "--all-positions",
        action="store_true",
        help="export every cached position, not only the content's",
    )
    xi = xs.add_parser(
        "import",
        help="fill the cache from FILE: an export (.jsonl.gz) or a PGN with [%%eval] comments "
        "(lichess format)",
    )
    xi.add_argument("file", type=Path)
    _content_options(xi)

    cal = sub.add_parser(
        "calibrate",
        help="rebuild the Elo calibration of the intrinsic ratings and its page",
        description="Fit Regan & Haworth's model to the content's rated games bucket by "
        "bucket, print the calibration table and write calibration.html and "
        "data/calibration.{csv,json} into the output folder (positions not yet in the "
        "cache are analysed first, as by build).",
    )
    _content_options(cal)
    cal.add_argument("--output", type=Path, default=Path("output"), metavar="DIR")
    cal.add_argument(
        "--method",
        choices=["percentile", "ml", "mm_ad"],
        help="fitting method (default: [intrinsic] fit, percentile)",
    )
    cal.add_argument(
        "--width",
        type=int,
        metavar="ELO",
        help="both players within ± ELO of a milepost (default: [intrinsic] milepost_width; "
        "the seed used 20)",
    )
    _analysis_options(cal)
    return ap


def _overrides(args: argparse.Namespace) -> dict[str, dict[str, Any]]:
    a: dict[str, Any] = {}
    if getattr(args, "engine", None):
        a["engine"] = args.engine
    if getattr(args, "workers", None) is not None:
        a["workers"] = args.workers
    if getattr(args, "depth", None) is not None:
        a["depth"], a["nodes"] = args.depth, 0
    if getattr(args, "nodes", None) is not None:
        a["nodes"], a["depth"] = args.nodes, 0
    if getattr(args, "multipv", None) is not None:
        a["multipv"] = args.multipv
    return {"analysis": a} if a else {}


def _terminate(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    # `kill` stops a build like Ctrl-C: finished chunks stay cached, engines are shut down.
    signal.signal(signal.SIGTERM, _terminate)
    # Ctrl-C too, even when started in the background by a shell that ignores SIGINT.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        return _dispatch(args)
    except SiteBuilderError as exc:
        print(f"site-builder: error: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:  # a disk full or read-only, a folder not ours: no traceback
        print(f"site-builder: error: {_os_error_message(exc, args)}", file=sys.stderr)
        return EXIT_IO
    except sqlite3.Error as exc:  # a cache's database (diskcache is SQLite)
        print(f"site-builder: error: {_sqlite_error_message(exc, args)}", file=sys.stderr)
        return EXIT_IO
    except BrokenProcessPool:  # a worker killed (out of memory, by a user): no traceback
        print(
            "site-builder: error: a worker process of the build ended abruptly (killed, or out"
            " of memory?). Finished work is cached; run the command again to resume.",
            file=sys.stderr,
        )
        return EXIT_WORKER
    except KeyboardInterrupt:
        print(
            "\nInterrupted. Finished analysis is cached; run the command again to resume.",
            file=sys.stderr,
        )
        return 130


#: Exit code of a file or folder that cannot be read or written (disk full, read-only, no
#: permission); 2 is bad content or settings, 130 an interruption.
EXIT_IO = 74  # sysexits.h EX_IOERR
#: Exit code of a build whose worker process died (sysexits.h EX_OSERR).
EXIT_WORKER = 71

_FULL = {errno.ENOSPC, errno.EDQUOT, errno.EFBIG}


def _folders(args: argparse.Namespace) -> list[tuple[str, Path]]:
    """The folders the command writes to, as (what, path)."""
    found: list[tuple[str, Path]] = []
    if getattr(args, "to", None) is not None:
        found.append(("publish folder", args.to))
    if args.command == "analysis" and getattr(args, "action", None) == "export":
        found.append(("export file", args.file))
    if getattr(args, "output", None) is not None and args.command != "serve":
        found.append(("output folder", args.output))
    if getattr(args, "content", None) is not None:
        from site_builder.analysis.stage import build_cache_dir, default_cache_dir

        cache = args.cache or default_cache_dir(args.content)
        found += [("evaluation cache", cache), ("build cache", build_cache_dir(cache))]
    return found


def _free_bytes(path: Path) -> int | None:
    for folder in (path, *path.absolute().parents):
        if folder.exists():
            try:
                return shutil.disk_usage(folder).free
            except OSError:
                return None
    return None


def _where(args: argparse.Namespace, full: bool) -> str:
    """Which of the command's folders a write without a file name went to: when the disk is
    full, those on a disk with less than 1 MB free."""
    folders = _folders(args)
    if full:
        low = [(w, p) for w, p in folders if (_free_bytes(p) or 0) < 2**20]
        folders = low or folders
    return " or ".join(f"the {what} {path}" for what, path in folders) or "a file"


def _os_error_message(exc: OSError, args: argparse.Namespace) -> str:
    """One line for an OSError: what happened, to which path, what to do."""
    code = exc.errno
    path = exc.filename if exc.filename is not None else None
    place = str(path) if path is not None else _where(args, code in _FULL)
    reason = exc.strerror or str(exc)
    if code in _FULL:
        return (
            f"no space left while writing {place} ({reason}). Free some space on that disk "
            "(or write elsewhere: --output DIR, --cache DIR) and run the command again; "
            "finished analysis stays in the evaluation cache."
        )
    if code == errno.EROFS:
        return (
            f"{place} is on a read-only file system. Remount it read-write or choose a "
            "writable folder (--output DIR, --cache DIR)."
        )
    if code in {errno.EACCES, errno.EPERM}:
        return (
            f"permission denied: {place}. Make it writable by this user (chmod/chown) or "
            "choose another folder (--output DIR, --cache DIR)."
        )
    if code == errno.EIO:
        return f"input/output error at {place}: the disk may be failing; check it (dmesg)."
    if code == errno.ENOENT:
        return f"{place} does not exist ({reason}); check the path."
    return f"{reason}: {place}."


def _sqlite_error_message(exc: sqlite3.Error, args: argparse.Namespace) -> str:
    """One line for a failing cache database; SQLite does not say which file, so the
    command's cache folders are named."""
    code = sqlite_code(exc)
    caches = [(w, p) for w, p in _folders(args) if w.endswith("cache")]
    if code == SQLITE_FULL:
        return _os_error_message(OSError(errno.ENOSPC, str(exc)), args)
    where = " or ".join(f"{p}" for _, p in caches) or "the cache folder"
    if code in SQLITE_UNWRITABLE and caches:
        from site_builder.incremental import unwritable

        return _os_error_message(unwritable(caches[0][1]), args)
    return f"the cache database in {where} failed ({exc}); `site-builder doctor` checks it."


def _dispatch(args: argparse.Namespace) -> int:
    from site_builder import commands

    if args.command == "serve":
        return commands.serve(args.output, args.bind, args.port)
    if args.command == "publish":
        return commands.publish(args)
    settings = load_settings(args.content, _overrides(args))
    if args.command == "build":
        return commands.build(args, settings)
    if args.command == "analyse":
        return commands.analyse(args, settings)
    if args.command == "doctor":
        return commands.doctor(args, settings)
    if args.command == "analysis":
        return commands.analysis(args, settings)
    if args.command == "calibrate":
        return commands.calibrate(args, settings)
    raise AssertionError(args.command)


if __name__ == "__main__":
    raise SystemExit(main())
