"""What the last build wrote, as the render looks it up: each page's digest, each page set's
key and paths, the files on the output's record.

Held as sorted arrays of the names' 128-bit hashes beside their values, not as Python dicts
and sets of strings: at 30 times the demo (400,000 files), those took about 0.25 GB in each
render process, and a render worker received them all. A name not in a table is found
absent but with odds of 2^-128 per name.
"""

from __future__ import annotations

import array
import bisect
import hashlib
import itertools
from abc import ABC, abstractmethod
from collections.abc import Iterable, Iterator, Mapping
from typing import Any, Self

import numpy as np

_U64 = np.dtype(np.uint64)


def path_key(name: str) -> tuple[int, int]:
    """A name's 128-bit hash, as the tables find it (made once for a name looked up in
    several tables)."""
    h = hashlib.blake2b(name.encode(), digest_size=16).digest()
    return int.from_bytes(h[:8], "big"), int.from_bytes(h[8:], "big")


def _words(values: np.ndarray[Any, Any]) -> array.array[int]:
    """64-bit words as an ``array``: bisect and indexing give Python ints, fast."""
    out = array.array("Q")
    out.frombytes(np.ascontiguousarray(values, dtype=_U64).tobytes())
    return out


class _Names:
    """Names by their hash: :meth:`find` gives a name's row, or -1."""

    __slots__ = ("hi", "lo")

    def __init__(self, hi: array.array[int], lo: array.array[int]) -> None:
        self.hi, self.lo = hi, lo

    @staticmethod
    def order(names: list[str]) -> tuple[np.ndarray[Any, Any], _Names]:
        """The rows' order by hash, and the sorted names."""
        pairs = [path_key(n) for n in names]
        hi = np.fromiter((p[0] for p in pairs), dtype=_U64, count=len(pairs))
        lo = np.fromiter((p[1] for p in pairs), dtype=_U64, count=len(pairs))
        order = np.lexsort((lo, hi))
        return order, _Names(_words(hi[order]), _words(lo[order]))

    @staticmethod
    def joined(parts: list[_Names]) -> tuple[np.ndarray[Any, Any], _Names]:
        """The rows of ``parts`` (one after the other) in hash order, and the names."""
        hi = np.concatenate([np.frombuffer(p.hi, dtype=_U64) for p in parts])
        lo = np.concatenate([np.frombuffer(p.lo, dtype=_U64) for p in parts])
        order = np.lexsort((lo, hi))
        return order, _Names(_words(hi[order]), _words(lo[order]))

    def find(self, name: str) -> int:
        return self.find_key(path_key(name))

    def find_key(self, key: tuple[int, int]) -> int:
        hi, lo = key
        his, los = self.hi, self.lo
        i = bisect.bisect_left(his, hi)
        n = len(his)
        while i < n and his[i] == hi:
            if los[i] == lo:
                return i
            i += 1
        return -1

    def __len__(self) -> int:
        return len(self.hi)

    def same(self, other: _Names) -> bool:
        return self.hi == other.hi and self.lo == other.lo


def _texts(values: list[str]) -> np.ndarray[Any, Any]:
    """Values (digests: no NUL at their end) as one fixed-width bytes array."""
    return (
        np.array([v.encode() for v in values], dtype=bytes) if values else np.zeros(0, dtype="S1")
    )


class _Table(ABC):
    """A table by name (:class:`_Names`): ``get``, ``in``, ``len`` and ``[name]`` from each
    row's :meth:`value`."""

    __slots__ = ("_names",)
    _names: _Names

    @abstractmethod
    def __init__(self, value: Any = ()) -> None:
        """Made from a mapping of names to values, or from (name, value) pairs."""

    @abstractmethod
    def value(self, row: int) -> Any:
        """The value of ``row`` (a row :meth:`row_of` found)."""

    @classmethod
    def of(cls, value: Any) -> Self:
        """``value`` itself if a table of this kind, else the table made from it (a dict)."""
        return value if isinstance(value, cls) else cls(value or {})

    def row_of(self, key: tuple[int, int]) -> int:
        """The row of the name of ``key`` (:func:`path_key`), or -1."""
        return self._names.find_key(key)

    def get(self, name: str, default: Any = None) -> Any:
        i = self._names.find(name)
        return default if i < 0 else self.value(i)

    def __getitem__(self, name: str) -> Any:
        found = self.get(name)
        if found is None:
            raise KeyError(name)
        return found

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and self._names.find(name) >= 0

    def __len__(self) -> int:
        return len(self._names)

    __hash__ = None  # type: ignore[assignment]


class PageDigests(_Table):
    """Page path → the digest of what the page was made from (as :func:`write_site` keeps
    it). Reads like a mapping (iterating gives the paths, in no particular order); made from
    one."""

    __slots__ = ("_paths", "_values")

    def __init__(self, digests: Mapping[str, str] | Iterable[tuple[str, str]] = ()) -> None:
        pairs = list(digests.items() if isinstance(digests, Mapping) else digests)
        order, self._names = _Names.order([p for p, _ in pairs])
        chosen = order.tolist()
        self._values = _texts([pairs[i][1] for i in chosen])
        self._paths = "\0".join(pairs[i][0] for i in chosen).encode()

    @staticmethod
    def joined(parts: Iterable[PageDigests]) -> PageDigests:
        """One table of several with no path in two."""
        parts = [p for p in parts if len(p)]
        out = PageDigests()
        if parts:
            order, out._names = _Names.joined([p._names for p in parts])
            out._values = np.concatenate([p._values for p in parts])[order]
            paths = [path for p in parts for path in p]
            out._paths = "\0".join(paths[i] for i in order.tolist()).encode()
        return out

    def __iter__(self) -> Iterator[str]:
        return iter(self._paths.decode().split("\0") if len(self) else [])

    def value(self, row: int) -> str:
        return str(self._values[row].decode())

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Mapping):
            other = PageDigests(other)
        if not isinstance(other, PageDigests):
            return NotImplemented
        return self._names.same(other._names) and bool(np.array_equal(self._values, other._values))


class PageSetKeys(_Table):
    """Page-set name → (its key's digest, the paths of its pages), as :func:`write_site`
    keeps them. The paths of all sets are one block of text."""

    __slots__ = ("_keys", "_paths", "_starts")

    def __init__(
        self,
        sets: Mapping[str, tuple[str, list[str]]]
        | Iterable[tuple[str, tuple[str, list[str]]]] = (),
    ) -> None:
        pairs = list(sets.items() if isinstance(sets, Mapping) else sets)
        order, names = _Names.order([n for n, _ in pairs])
        chosen = [pairs[i][1] for i in order.tolist()]
        # Paths never hold a NUL (no file system allows one).
        self._set(
            names, _texts([key for key, _ in chosen]), ["\0".join(p).encode() for _, p in chosen]
        )

    def _set(self, names: _Names, keys: np.ndarray[Any, Any], texts: list[bytes]) -> None:
        self._names, self._keys = names, keys
        self._starts = np.zeros(len(texts) + 1, dtype=np.int64)
        np.cumsum([len(t) for t in texts], out=self._starts[1:])
        self._paths = b"".join(texts)

    def _texts(self) -> list[bytes]:
        starts = self._starts.tolist()
        return [self._paths[a:b] for a, b in itertools.pairwise(starts)]

    @staticmethod
    def joined(parts: Iterable[PageSetKeys]) -> PageSetKeys:
        """One table of several with no set in two."""
        parts = [p for p in parts if len(p)]
        out = PageSetKeys()
        if parts:
            order, names = _Names.joined([p._names for p in parts])
            keys = np.concatenate([p._keys for p in parts])[order]
            texts = [t for p in parts for t in p._texts()]
            out._set(names, keys, [texts[i] for i in order.tolist()])
        return out

    def value(self, row: int) -> tuple[str, list[str]]:
        text = self._paths[int(self._starts[row]) : int(self._starts[row + 1])].decode()
        return self._keys[row].decode(), text.split("\0") if text else []

    def paths(self) -> list[str]:
        """The paths of every set's pages."""
        return [p for t in self._texts() if t for p in t.decode().split("\0")]

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Mapping):
            other = PageSetKeys(other)
        if not isinstance(other, PageSetKeys):
            return NotImplemented
        return (
            self._names.same(other._names)
            and bool(np.array_equal(self._keys, other._keys))
            and bool(np.array_equal(self._starts, other._starts))
            and self._paths == other._paths
        )


class PathSet:
    """The files of the last build on the output's record: ``in`` and iteration (in no
    particular order), the paths held as one block of text."""

    __slots__ = ("_names", "_paths", "_size")

    def __init__(self, paths: Iterable[str] = ()) -> None:
        distinct = list(set(paths))
        order, self._names = _Names.order(distinct)
        self._size = len(distinct)
        self._paths = "\0".join(distinct[i] for i in order.tolist()).encode()

    @staticmethod
    def of(paths: PathSet | Iterable[str]) -> PathSet:
        return paths if isinstance(paths, PathSet) else PathSet(paths)

    def __contains__(self, path: object) -> bool:
        return isinstance(path, str) and self._names.find(path) >= 0

    def has(self, key: tuple[int, int]) -> bool:
        """The path of ``key`` (:func:`path_key`) is in the set."""
        return self._names.find_key(key) >= 0

    def __iter__(self) -> Iterator[str]:
        return iter(self._paths.decode().split("\0") if self._size else [])

    def __len__(self) -> int:
        return self._size
