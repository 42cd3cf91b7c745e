"""Player-name normalisation through the alias table in ``content/aliases.toml``."""

from __future__ import annotations

import re
import tomllib
import unicodedata
from collections.abc import Mapping
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

    def __init__(self, canonical_by_variant: Mapping[str, str]) -> None:
        self._map = {tidy(k).casefold(): v for k, v in canonical_by_variant.items()}

    @classmethod
    def load(cls, path: Path) -> AliasTable:
        if not path.exists():
            return cls({})
        try:
            data = tomllib.loads(path.read_text(encoding="utf-8"))
        except tomllib.TOMLDecodeError as exc:
            raise ConfigError(f"{path}: not valid TOML: {exc}") from exc
        mapping: dict[str, str] = {}
        for canonical, variants in sorted(data.items()):
            if not isinstance(variants, list) or not all(isinstance(v, str) for v in variants):
                raise ConfigError(f"{path}: {canonical!r} must map to a list of spellings")
            canon = tidy(canonical)
            for variant in [canonical, *variants]:
                key = tidy(variant).casefold()
                if key in mapping and mapping[key] != canon:
                    raise ConfigError(
                        f"{path}: spelling {variant!r} is listed under both "
                        f"{mapping[key]!r} and {canon!r}"
                    )
                mapping[key] = canon
        return cls(mapping)

    def canonical(self, name: str) -> str:
        clean = tidy(name)
        return self._map.get(clean.casefold(), clean)

    def __len__(self) -> int:
        return len(self._map)

    def fingerprint(self) -> list[tuple[str, str]]:
        """The whole table, sorted: what a cached parse depends on."""
        return sorted(self._map.items())
