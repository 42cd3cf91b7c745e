"""Stable, unique, file-system-safe names for pages."""

from __future__ import annotations

import hashlib
import re
import unicodedata
from collections.abc import Iterable


def slugify(text: str) -> str:
    ascii_text = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode()
    slug = re.sub(r"[^a-z0-9]+", "-", ascii_text.lower()).strip("-")
    return slug[:60].strip("-") or "x"


def unique_slugs(names: Iterable[str]) -> dict[str, str]:
    """name → slug; names whose slugs collide get a short hash of the name appended."""
    names = sorted(set(names))
    by_slug: dict[str, list[str]] = {}
    for name in names:
        by_slug.setdefault(slugify(name), []).append(name)
    out: dict[str, str] = {}
    for slug, group in by_slug.items():
        for name in group:
            if len(group) == 1:
                out[name] = slug
            else:
                out[name] = f"{slug}-{hashlib.sha1(name.encode()).hexdigest()[:6]}"
    return out
