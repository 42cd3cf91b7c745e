"""The evaluation cache: a diskcache that never evicts, written only by the build driver."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

import diskcache

# Never evict: an evaluation costs engine time (METHODS.md 0b: the default evicts at 1 GB).
_SETTINGS = {"eviction_policy": "none", "size_limit": 2**62, "cull_limit": 0}


class EvalCache:
    """Maps cache keys (see :mod:`spec`) to JSON-like evaluation values."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        directory.mkdir(parents=True, exist_ok=True)
        self._cache = diskcache.Cache(str(directory), **_SETTINGS)

    def get_many(self, keys: Iterable[str]) -> dict[str, Any]:
        found = {}
        for key in keys:
            value = self._cache.get(key, default=None)
            if value is not None:
                found[key] = value
        return found

    def __contains__(self, key: str) -> bool:
        return key in self._cache

    def get(self, key: str) -> Any:
        return self._cache.get(key, default=None)

    def put_many(self, items: Mapping[str, Any]) -> None:
        """One transaction for a finished chunk."""
        with self._cache.transact():
            for key, value in items.items():
                self._cache.set(key, value)

    def __iter__(self) -> Iterator[str]:
        return iter(self._cache)

    def __len__(self) -> int:
        return len(self._cache)

    def volume(self) -> int:
        return int(self._cache.volume())

    def close(self) -> None:
        self._cache.close()

    def __enter__(self) -> EvalCache:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
