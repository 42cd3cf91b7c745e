"""Stable, unique, file-system-safe names for pages."""

from __future__ import annotations

import hashlib
import re
import unicodedata
from collections.abc import Collection, Iterable, Mapping

from site_builder.ingest.names import spelling_marks


def slugify(text: str) -> str:
    ascii_text = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode()
    slug = re.sub(r"[^a-z0-9]+", "-", ascii_text.lower()).strip("-")
    return slug[:60].strip("-") or "x"


def slug_rank(
    name: str, established: Collection[str] = (), previous: Mapping[str, str] | None = None
) -> tuple[bool, bool, int, str]:
    """Who of several names with the same plain slug keeps it (the smallest): a name listed
    as canonical in the alias table, then the name that had it in the output's last build
    (``previous``: name → slug), so that a new spelling never takes an existing player's
    address, then the spelling with more hyphens, apostrophes and accents (the fuller form:
    "Vachier-Lagrave" before "Vachier Lagrave"), then the first by code point. A first build
    depends on the names and the alias table alone, not on build order."""
    marks = spelling_marks(name)
    had_it = previous is not None and previous.get(name) == slugify(name)
    return (name not in established, not had_it, -marks, name)


def name_hash(name: str, length: int = 6) -> str:
    return hashlib.sha1(name.encode()).hexdigest()[:length]


def unique_slugs(
    names: Iterable[str],
    established: Collection[str] = (),
    previous: Mapping[str, str] | None = None,
) -> dict[str, str]:
    """name → slug. Names whose plain slugs collide: the one first by :func:`slug_rank` keeps
    the plain slug, every other gets a short hash of its own name appended, so a name's
    suffixed slug depends on that name only."""
    by_slug: dict[str, list[str]] = {}
    for name in sorted(set(names)):
        by_slug.setdefault(slugify(name), []).append(name)
    out: dict[str, str] = {}
    for slug, group in sorted(by_slug.items()):
        group.sort(key=lambda n: slug_rank(n, established, previous))
        out[group[0]] = slug
        for name in group[1:]:
            out[name] = f"{slug}-{name_hash(name)}"
    taken = set(by_slug)
    for name, slug in sorted(out.items()):
        if slug not in by_slug and slug in taken:  # a suffixed slug met a plain one
            slug = f"{slugify(name)}-{name_hash(name, 16)}"
            out[name] = slug
        taken.add(slug)
    return out
