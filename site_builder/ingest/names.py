"""Player-name normalisation through the alias table in ``content/aliases.toml``."""

from __future__ import annotations

import json
import re
import tomllib
import unicodedata
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from site_builder.errors import ConfigError

_SPACES = re.compile(r"\s+")
_COMMA = re.compile(r"\s*,\s*")


def tidy(name: str) -> str:
    """Whitespace and comma spacing only: ``"Carlsen,Magnus "`` → ``"Carlsen, Magnus"``."""
    name = unicodedata.normalize("NFC", name)
    name = _SPACES.sub(" ", name).strip()
    return _COMMA.sub(", ", name).strip(", ")


class AliasTable:
    """Maps every listed spelling of a player to one canonical name."""

    def __init__(
        self,
        canonical_by_variant: Mapping[str, str],
        listed: Mapping[str, Sequence[str]] | None = None,
    ) -> None:
        self._map = {tidy(k).casefold(): v for k, v in canonical_by_variant.items()}
        #: canonical name → its variants as written in the file
        self.listed: dict[str, list[str]] = {k: list(v) for k, v in (listed or {}).items()}

    @classmethod
    def load(cls, path: Path) -> AliasTable:
        if not path.exists():
            return cls({})
        try:
            data = tomllib.loads(path.read_text(encoding="utf-8"))
        except tomllib.TOMLDecodeError as exc:
            raise ConfigError(f"{path}: not valid TOML: {exc}") from exc
        mapping: dict[str, str] = {}
        listed: dict[str, list[str]] = {}
        for canonical, variants in sorted(data.items()):
            if not isinstance(variants, list) or not all(isinstance(v, str) for v in variants):
                raise ConfigError(f"{path}: {canonical!r} must map to a list of spellings")
            canon = tidy(canonical)
            listed.setdefault(canon, []).extend(variants)
            for variant in [canonical, *variants]:
                key = tidy(variant).casefold()
                if key in mapping and mapping[key] != canon:
                    raise ConfigError(
                        f"{path}: spelling {variant!r} is listed under both "
                        f"{mapping[key]!r} and {canon!r}"
                    )
                mapping[key] = canon
        return cls(mapping, listed)

    def canonical(self, name: str) -> str:
        clean = tidy(name)
        return self._map.get(clean.casefold(), clean)

    def __len__(self) -> int:
        return len(self._map)

    def fingerprint(self) -> list[tuple[str, str]]:
        """The whole table, sorted: what a cached parse depends on."""
        return sorted(self._map.items())


# --- near-duplicate names ------------------------------------------------------------------

_WORD = re.compile(r"[a-z0-9]+")


def name_words(name: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """Surname and given-name words, case, accents and punctuation dropped:
    ``"Vachier-Lagrave, Maxime"`` → ``(("vachier", "lagrave"), ("maxime",))``. Without a
    comma every word counts as the surname."""
    folded = unicodedata.normalize("NFKD", tidy(name)).encode("ascii", "ignore").decode()
    surname, _, given = folded.casefold().partition(",")
    return tuple(_WORD.findall(surname)), tuple(_WORD.findall(given))


def _abbreviates(short: tuple[str, ...], full: tuple[str, ...]) -> bool:
    """``short`` gives ``full``'s given names as initials ("M" for "Maxime", "J" for
    "Jon Ludvig"): at least one word, each an initial or the whole word, and not equal."""
    if not short or len(short) > len(full) or short == full:
        return False
    return all(
        s == f or (len(s) == 1 and f.startswith(s)) for s, f in zip(short, full, strict=False)
    )


#: Given names beyond which :func:`_abbreviations` are not listed (2^n of them).
_MOST_GIVEN = 10


def _abbreviations(full: tuple[str, ...]) -> set[tuple[str, ...]] | None:
    """Every ``short`` with ``_abbreviates(short, full)``: a first part of ``full``'s words,
    each the word or its initial, ``full`` itself left out; None past :data:`_MOST_GIVEN`."""
    if len(full) > _MOST_GIVEN:
        return None
    out: set[tuple[str, ...]] = set()
    prefixes: list[tuple[str, ...]] = [()]
    for word in full:
        prefixes = [(*p, w) for p in prefixes for w in dict.fromkeys((word, word[:1]))]
        out.update(prefixes)
    out.discard(full)
    return out


def alike(a: str, b: str) -> bool:
    """The two names normalise alike: the same words once case, accents, hyphens, spaces
    and commas are dropped, or the same surname with one's given names as initials."""
    (sa, ga), (sb, gb) = name_words(a), name_words(b)
    if sa + ga == sb + gb:
        return True
    return sa == sb and (_abbreviates(ga, gb) or _abbreviates(gb, ga))


@dataclass(frozen=True)
class NameGroup:
    """Spellings in the content that normalise alike and may be one player."""

    #: (name, games) of every spelling, the suggested canonical name first.
    names: tuple[tuple[str, int], ...]
    #: The line for content/aliases.toml that makes them one player.
    line: str
    #: True when the line replaces the canonical name's existing line.
    replaces: bool

    @property
    def canonical(self) -> str:
        return self.names[0][0]


def toml_string(text: str) -> str:
    """A TOML basic string (JSON's escapes are TOML's)."""
    return json.dumps(text, ensure_ascii=False)


def alias_line(canonical: str, variants: Iterable[str]) -> str:
    return f"{toml_string(canonical)} = [{', '.join(toml_string(v) for v in variants)}]"


def spelling_marks(name: str) -> int:
    """Hyphens, apostrophes, accents and other marks of a spelling: more is the fuller form
    ("Vachier-Lagrave" against "Vachier Lagrave")."""
    return sum(1 for c in name if not (c.isascii() and (c.isalnum() or c in " ,")))


def near_duplicates(games_by_name: Mapping[str, int], aliases: AliasTable) -> list[NameGroup]:
    """Groups of names (with their game counts) that normalise alike (:func:`alike`), each
    with the aliases.toml line that would merge them. The suggested canonical name is one
    already canonical in the alias table, else the spelling with full given names, then the
    one with more hyphens, apostrophes and accents (as :func:`render.slugs.slug_rank`, so the
    plain slug's owner), then the most games, then the first by code point."""
    words = {name: name_words(name) for name in sorted(games_by_name)}
    by_surname: dict[tuple[str, ...], list[str]] = {}
    by_words: dict[tuple[str, ...], list[str]] = {}
    by_name: dict[tuple[tuple[str, ...], tuple[str, ...]], list[str]] = {}
    for name, (surname, given) in words.items():
        by_surname.setdefault(surname, []).append(name)
        by_words.setdefault(surname + given, []).append(name)
        by_name.setdefault((surname, given), []).append(name)
    parent = {name: name for name in games_by_name}

    def root(n: str) -> str:
        while parent[n] != n:
            parent[n] = parent[parent[n]]
            n = parent[n]
        return n

    def join(a: str, b: str) -> None:
        ra, rb = root(a), root(b)
        if ra != rb:
            parent[max(ra, rb)] = min(ra, rb)

    for names in by_words.values():
        for other in names[1:]:
            join(names[0], other)
    # Beyond the same words, names of one surname are alike when one's given names
    # abbreviate the other's: each name is joined to the spellings its own given names
    # abbreviate to, looked up, not compared with every name of its surname.
    for name, (surname, given) in words.items():
        shorts = _abbreviations(given)
        if shorts is None:  # very many given names: compared one by one
            found = [n for n in by_surname[surname] if _abbreviates(words[n][1], given)]
        else:
            found = [n for short in shorts for n in by_name.get((surname, short), ())]
        for other in found:
            join(name, other)
    groups: dict[str, list[str]] = {}
    for name in sorted(games_by_name):
        groups.setdefault(root(name), []).append(name)
    out = []
    for members in groups.values():
        if len(members) < 2:
            continue

        def preference(n: str) -> tuple[bool, bool, int, int, str]:
            given = name_words(n)[1]
            initials = bool(given) and all(len(w) == 1 for w in given)
            return (
                n not in aliases.listed,
                initials,
                -spelling_marks(n),
                -games_by_name[n],
                n,
            )

        ordered = sorted(members, key=preference)
        canonical = ordered[0]
        known = aliases.listed.get(canonical, [])
        variants = [*known, *(n for n in ordered[1:] if n not in known)]
        out.append(
            NameGroup(
                tuple((n, games_by_name[n]) for n in ordered),
                alias_line(canonical, variants),
                canonical in aliases.listed,
            )
        )
    return sorted(out, key=lambda g: g.canonical)
