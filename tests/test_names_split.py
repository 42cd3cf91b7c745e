"""Issue 18 item 6: names that normalise alike are reported with the alias line to add, and an
existing player's page address never moves because another spelling appeared."""

from __future__ import annotations

import html
import re
import shutil
import tomllib
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from site_builder.ingest.names import AliasTable, alike, name_words, near_duplicates
from site_builder.render.slugs import slugify, unique_slugs
from tests.conftest import DATA, build_quietly, make_content

NEW = DATA / "new-tournament/20140827-20140906-sinquefield-cup-2nd.pgn"
SWISS = DATA / "small-site/games/GrandSwissPalma2017.pgn"
NO_ENGINE = "[analysis]\nclasses = []\n"


def _games_of(path: Path, name: str) -> str:
    text = path.read_text(encoding="utf-8").replace("\r\n", "\n")
    games = re.split(r"\n\s*\n(?=\[Event )", text)
    return "\n\n".join(g.strip() for g in games if f'"{name}"' in g) + "\n"


def test_names_normalise_alike() -> None:
    assert name_words("Vachier-Lagrave, Maxime") == (("vachier", "lagrave"), ("maxime",))
    assert alike("Vachier-Lagrave, Maxime", "Vachier Lagrave, Maxime")
    assert alike("Vachier-Lagrave, Maxime", "vachier lagrave,M")  # case, initial
    assert alike("Dominguez Perez, Leinier", "Domínguez Pérez, Leinier")  # accents
    assert alike("Wei, Yi", "Wei Yi")  # comma and spaces
    assert alike("Hammer, Jon Ludvig", "Hammer, J")
    assert not alike("Carlsen, Magnus", "Carlsen, Henrik")
    assert not alike("Wei, Yi", "Yi, Wei")
    assert not alike("Hammer, J", "Hammer, K")


def test_alias_line_extends_the_canonical_names_line(tmp_path: Path) -> None:
    aliases = tmp_path / "aliases.toml"
    aliases.write_text('"Vachier-Lagrave, Maxime" = ["Vachier Lagrave,M"]\n', encoding="utf-8")
    table = AliasTable.load(aliases)
    counts = {"Vachier Lagrave, Maxime": 10, "Vachier-Lagrave, Maxime": 9, "So, Wesley": 10}
    (group,) = near_duplicates(counts, table)
    assert group.canonical == "Vachier-Lagrave, Maxime" and group.replaces
    assert group.line == (
        '"Vachier-Lagrave, Maxime" = ["Vachier Lagrave,M", "Vachier Lagrave, Maxime"]'
    )
    # The line is valid TOML and, once in the file, makes the two spellings one player.
    aliases.write_text(group.line + "\n", encoding="utf-8")
    merged = AliasTable.load(aliases)
    assert merged.canonical("Vachier Lagrave, Maxime") == "Vachier-Lagrave, Maxime"
    assert near_duplicates({"Vachier-Lagrave, Maxime": 19, "So, Wesley": 10}, merged) == []
    # Without a line for either: the fuller spelling with more games is suggested.
    (fresh,) = near_duplicates({"Adams, M": 3, "Adams, Michael": 2}, AliasTable({}))
    assert fresh.line == '"Adams, Michael" = ["Adams, M"]' and not fresh.replaces
    quoted = near_duplicates({'O"Neil, Sean': 2, 'O"neil, Sean': 1}, AliasTable({}))
    assert tomllib.loads(quoted[0].line)  # quotes in names are escaped


def test_plain_slug_owner_does_not_depend_on_the_other_names() -> None:
    old = unique_slugs(["Vachier-Lagrave, Maxime", "So, Wesley"])
    new = unique_slugs(["Vachier-Lagrave, Maxime", "So, Wesley", "Vachier Lagrave, Maxime"])
    assert old["Vachier-Lagrave, Maxime"] == new["Vachier-Lagrave, Maxime"]
    assert old["Vachier-Lagrave, Maxime"] == "vachier-lagrave-maxime"
    assert new["Vachier Lagrave, Maxime"].startswith("vachier-lagrave-maxime-")
    # A name listed as canonical in the alias table keeps its plain slug against any newcomer.
    listed = {"Vachier Lagrave, Maxime": []}
    assert unique_slugs(list(new), listed)["Vachier Lagrave, Maxime"] == "vachier-lagrave-maxime"
    # The suffixed slug depends on the name alone; slugs stay unique.
    many = ["Carlsen, Magnus", "carlsen, magnus", "Carlsen Magnus", "Carlsén, Magnus"]
    slugs = unique_slugs(many)
    assert len(set(slugs.values())) == len(many)
    assert slugs["carlsen, magnus"] == unique_slugs(many[:2])["carlsen, magnus"]
    assert sorted(slugs.values())[0] == slugify("Carlsen, Magnus")


def test_new_tournament_with_a_near_duplicate_name(tmp_path: Path) -> None:
    """The issue's scenario: a site holding "Vachier-Lagrave, Maxime" gains a tournament that
    spells him "Vachier Lagrave, Maxime" (the demo's alias file lists neither spelling)."""
    content = make_content(
        tmp_path / "site", {"swiss.pgn": _games_of(SWISS, "Vachier-Lagrave, Maxime")}, NO_ENGINE
    )
    out = tmp_path / "out"
    build_quietly(content, out, tmp_path / "cache")
    page = out / "players/vachier-lagrave-maxime.html"
    assert page.is_file()
    assert "Names that may be one player" not in (out / "report.html").read_text("utf-8")
    shutil.copyfile(NEW, content / "games" / NEW.name)
    build_quietly(content, out, tmp_path / "cache")
    assert "Vachier-Lagrave, Maxime" in page.read_text(encoding="utf-8")  # same address
    others = sorted(p.name for p in (out / "players").glob("vachier-lagrave-maxime-*.html"))
    assert len(others) == 1
    assert "Vachier Lagrave, Maxime" in (out / "players" / others[0]).read_text("utf-8")
    report = html.unescape((out / "report.html").read_text(encoding="utf-8"))
    assert "Names that may be one player (1)" in report
    line = '"Vachier-Lagrave, Maxime" = ["Vachier Lagrave, Maxime"]'
    assert f"<code>{line}</code>" in report
    # Adding the line merges the spellings: one page, at the old address.
    (content / "aliases.toml").write_text(line + "\n", encoding="utf-8")
    build_quietly(content, out, tmp_path / "cache")
    assert not list((out / "players").glob("vachier-lagrave-maxime-*.html"))
    assert page.is_file()
    assert "Names that may be one player" not in (out / "report.html").read_text("utf-8")


def test_the_last_builds_owner_keeps_the_plain_slug() -> None:
    """A fuller spelling that appears later does not take the address of the existing one."""
    names = ["Vachier Lagrave, Maxime", "Vachier-Lagrave, Maxime"]
    first_build = {"Vachier Lagrave, Maxime": "vachier-lagrave-maxime"}
    slugs = unique_slugs(names, (), first_build)
    assert slugs["Vachier Lagrave, Maxime"] == "vachier-lagrave-maxime"
    assert slugs["Vachier-Lagrave, Maxime"].startswith("vachier-lagrave-maxime-")
    assert unique_slugs(names, (), slugs) == slugs  # and in every later build
    # Without a last build (a fresh output folder) the rule alone decides.
    assert unique_slugs(names)["Vachier-Lagrave, Maxime"] == "vachier-lagrave-maxime"


def test_a_fuller_spelling_added_later_keeps_the_existing_address(tmp_path: Path) -> None:
    """The reverse of the issue's scenario: the site holds the plainer spelling first."""
    games = _games_of(SWISS, "Vachier-Lagrave, Maxime").replace(
        '"Vachier-Lagrave, Maxime"', '"Vachier Lagrave, Maxime"'
    )
    content = make_content(tmp_path / "site", {"swiss.pgn": games}, NO_ENGINE)
    out = tmp_path / "out"
    build_quietly(content, out, tmp_path / "cache")
    page = out / "players/vachier-lagrave-maxime.html"
    assert "Vachier Lagrave, Maxime" in page.read_text(encoding="utf-8")
    fuller = _games_of(NEW, "Vachier Lagrave, Maxime").replace(
        '"Vachier Lagrave, Maxime"', '"Vachier-Lagrave, Maxime"'
    )
    (content / "games" / "sinquefield.pgn").write_text(fuller, encoding="utf-8")
    build_quietly(content, out, tmp_path / "cache")
    assert "Vachier Lagrave, Maxime" in page.read_text(encoding="utf-8")  # same address
    (others,) = (out / "players").glob("vachier-lagrave-maxime-*.html")
    assert "Vachier-Lagrave, Maxime" in others.read_text(encoding="utf-8")


def _pairwise_groups(counts: dict[str, int]) -> list[list[str]]:
    """The groups of names alike, by comparing every two names (the definition)."""
    names = sorted(counts)
    parent = {n: n for n in names}

    def root(n: str) -> str:
        while parent[n] != n:
            n = parent[n]
        return n

    for i, a in enumerate(names):
        for b in names[i + 1 :]:
            if alike(a, b):
                ra, rb = root(a), root(b)
                parent[max(ra, rb)] = min(ra, rb)
    groups: dict[str, list[str]] = {}
    for n in names:
        groups.setdefault(root(n), []).append(n)
    return sorted(sorted(g) for g in groups.values() if len(g) > 1)


_SURNAMES = ["Wang", "Li", "Vachier-Lagrave", "Vachier Lagrave"]
_GIVEN = ["Jon", "Ludvig", "Lei", "L", "Yi", "Y"]


@given(st.data())
@settings(max_examples=300, deadline=None)
def test_near_duplicates_are_the_names_alike_two_by_two(data: st.DataObject) -> None:
    """The groups found by looking up each name's abbreviations are those of comparing every
    two names, given names past the lookup's limit (ten) included."""
    counts: dict[str, int] = {}
    for _ in range(data.draw(st.integers(0, 12))):
        surname = data.draw(st.sampled_from(_SURNAMES))
        given_names = data.draw(st.lists(st.sampled_from(_GIVEN), max_size=12))
        name = surname + (", " + " ".join(given_names) if given_names else "")
        counts[name] = len(counts)
        if given_names and data.draw(st.booleans()):  # an abbreviated spelling of it
            cut = data.draw(st.integers(1, len(given_names)))
            short = [w[0] if data.draw(st.booleans()) else w for w in given_names[:cut]]
            counts.setdefault(f"{surname}, {' '.join(short)}", len(counts))
    found = near_duplicates(counts, AliasTable({}, {}))
    assert sorted(sorted(n for n, _ in g.names) for g in found) == _pairwise_groups(counts)
