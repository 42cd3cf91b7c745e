"""What changed since the last build, and the build cache that lets unchanged work be skipped.

Change detection runs in tiers, as doit does: the same (mtime, size) → unchanged without
reading the file; otherwise the content hash decides. Parsed files, the plies of each game and
the move rows of each analysed game are cached under keys that hold everything they depend on.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path
from typing import Any

import diskcache

from site_builder.config import TimeControlSection
from site_builder.ingest.names import AliasTable
from site_builder.ingest.pgn import Reader, read_file
from site_builder.model import GameRecord, Problem

#: Bump when parsing, plies or move rows change meaning.
BUILD_CACHE_VERSION = 1


def digest(data: Any) -> str:
    """md5 of sorted JSON: the config digest of doit and of site_builder.config."""
    blob = json.dumps(data, sort_keys=True, default=str).encode()
    return hashlib.md5(blob).hexdigest()


class BuildCache:
    """A diskcache beside the evaluation cache for everything a build can reuse."""

    def __init__(self, directory: Path) -> None:
        directory.mkdir(parents=True, exist_ok=True)
        self._cache = diskcache.Cache(str(directory), eviction_policy="none", size_limit=2**62)
        self.hits = 0
        self.misses = 0

    def close(self) -> None:
        self._cache.close()

    def __enter__(self) -> BuildCache:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def file_hash(self, path: Path) -> str:
        """Content hash of a file; (mtime, size) unchanged since last time → not re-read."""
        st = path.stat()
        stamp_key = f"stamp|{path.resolve()}"
        stamp = self._cache.get(stamp_key)
        if stamp is not None and stamp[0] == st.st_mtime_ns and stamp[1] == st.st_size:
            return str(stamp[2])
        sha = hashlib.sha256(path.read_bytes()).hexdigest()
        self._cache.set(stamp_key, (st.st_mtime_ns, st.st_size, sha))
        return sha

    def get(self, key: str) -> Any:
        value = self._cache.get(key, default=None)
        if value is None:
            self.misses += 1
        else:
            self.hits += 1
        return value

    def __contains__(self, key: str) -> bool:
        return key in self._cache

    def set(self, key: str, value: Any) -> None:
        self._cache.set(key, value)

    def engine_name(self, path: str, identify: Callable[[str], str]) -> str:
        """The engine's ``id name``, remembered while the executable is unchanged."""
        st = Path(path).stat()
        key = f"engine|{Path(path).resolve()}|{st.st_mtime_ns}|{st.st_size}"
        name = self.get(key)
        if name is None:
            name = identify(path)
            self.set(key, name)
        return str(name)

    def cached_reader(self, aliases: AliasTable, tc_rules: TimeControlSection) -> Reader:
        """``read_file`` that returns the cached result for an unchanged file."""
        context = digest([BUILD_CACHE_VERSION, aliases.fingerprint(), asdict(tc_rules)])

        def read(
            path: Path, source: str, aliases: AliasTable, tc_rules: TimeControlSection
        ) -> tuple[list[GameRecord], list[Problem]]:
            key = f"file|{source}|{self.file_hash(path)}|{context}"
            found = self.get(key)
            if found is not None:
                return found  # type: ignore[no-any-return]
            result = read_file(path, source, aliases, tc_rules)
            self.set(key, result)
            return result

        return read
