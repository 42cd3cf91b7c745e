"""The few exceptions the builder raises on purpose, and how SQLite's errors are read."""

import sqlite3

#: SQLite's primary result codes (sqlite3.h) that say the database file is damaged,
SQLITE_DAMAGED = frozenset({11, 26})  # SQLITE_CORRUPT, SQLITE_NOTADB
#: ... that it cannot be written (SQLITE_PERM, SQLITE_READONLY, SQLITE_CANTOPEN),
SQLITE_UNWRITABLE = frozenset({3, 8, 14})
#: ... and that the disk is full.
SQLITE_FULL = 13


def sqlite_code(exc: sqlite3.Error) -> int:
    """The primary result code of a SQLite error (0 when it carries none)."""
    return int(getattr(exc, "sqlite_errorcode", 0) or 0) & 0xFF


class SiteBuilderError(Exception):
    """Base class: a problem the user can fix, reported without a traceback."""


class ConfigError(SiteBuilderError, ValueError):
    """A setting in site.toml (or on the command line) is invalid; the message names it."""


class EngineNotFoundError(SiteBuilderError, FileNotFoundError):
    """No UCI engine at the configured path."""


class EngineError(SiteBuilderError, RuntimeError):
    """The engine failed in a way that restarting cannot fix."""
