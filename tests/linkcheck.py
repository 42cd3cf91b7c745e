"""A link checker for a built site: every relative href/src of every HTML page must name a file
of the site, and every #fragment an id (or name) in the target page. The search box's index
counts too: each ``data-index`` (the script the box loads) must be a file of the site, and
every page the index lists must exist (its paths are relative to the form's ``data-root``).

Run it on any output folder: ``python -m tests.linkcheck output/`` prints the broken links and
exits 1 when there are any.
"""

from __future__ import annotations

import json
import os
import posixpath
import sys
from dataclasses import dataclass, field
from html.parser import HTMLParser
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

from lxml import etree

#: Attributes that point at another resource, by tag.
LINK_ATTRS = {
    "a": ("href",),
    "link": ("href",),
    "script": ("src",),
    "img": ("src",),
    "iframe": ("src",),
    "source": ("src",),
    "form": ("action",),
    "area": ("href",),
}
#: Schemes a link may use without being a file of the site (the visitor follows them).
OUTSIDE = ("http", "https", "mailto")
#: Attributes of any tag that name files of the site: the downloads of a table (several, space
#: separated) and the search box's index script.
LIST_ATTRS = ("data-downloads",)
FILE_ATTRS = ("data-index",)


@dataclass
class _Page:
    """What the checks need of one page: its links, its ids and its search boxes."""

    links: list[tuple[str, str, int]] = field(default_factory=list)  # (tag, url, line)
    ids: set[str] = field(default_factory=set)
    #: (script, root, line) of each search box: its data-index and data-root
    indexes: list[tuple[str, str, int]] = field(default_factory=list)


def _read_page(data: bytes) -> _Page:
    """Parsed by libxml2's HTML parser (lxml): scripts and styles are text, entities in
    attributes are decoded, as a browser reads them."""
    page = _Page()
    try:
        doc = etree.fromstring(data, etree.HTMLParser(encoding="utf-8"))
    except etree.XMLSyntaxError:
        return page
    if doc is None:  # an empty file
        return page
    for el in doc.iter(etree.Element):
        tag, attrs, line = el.tag, el.attrib, el.sourceline or 0
        if not attrs:
            continue
        for name, value in attrs.items():
            if name in ("id", "name") and tag != "meta" and tag != "input":
                page.ids.add(value)
            if name in LINK_ATTRS.get(tag, ()):
                page.links.append((tag, value, line))
            if name in LIST_ATTRS:
                for part in value.split():
                    page.links.append((tag, part, line))
            if name in FILE_ATTRS:
                page.links.append((tag, value, line))
        index = attrs.get("data-index")
        if index:
            page.indexes.append((index, attrs.get("data-root") or "", line))
    return page


@dataclass
class Broken:
    page: str
    line: int
    url: str
    reason: str

    def __str__(self) -> str:
        return f"{self.page}:{self.line}: {self.url} — {self.reason}"


@dataclass
class Report:
    pages: int = 0
    links: int = 0
    outside: int = 0
    broken: list[Broken] = field(default_factory=list)
    #: site-relative paths of every file some page links to
    targets: set[str] = field(default_factory=set)


def _parse(path: Path) -> _Page:
    return _read_page(path.read_bytes())


def _script_data(script: Path) -> Any:
    """The data a script of the site sets: ``window.X = {...};`` or, a shard,
    ``(window.SITE_SHARDS=...)["key"]={...};``."""
    text = script.read_text(encoding="utf-8")
    start = text.index("]=") + 2 if text.startswith("(window.SITE_SHARDS") else text.index("{")
    return json.loads(text[start : text.rindex("}") + 1])


def search_index_paths(script: Path) -> list[str]:
    """Every page path of a search index, players and events: one script
    (``window.SITE_INDEX = {...};``) or a manifest of grams (``{"grams": {...}}``) whose
    shards are ``search/g<hex>.js`` beside it."""
    data = _script_data(script)
    if set(data) == {"grams"}:
        folder = script.parent / "search"
        shards = [folder / f"g{g.encode('utf-8').hex()}.js" for g in sorted(data["grams"])]
        parts = [_script_data(s) for s in shards]
        return sorted({e[1] for part in parts for kind in sorted(part) for e in part[kind]})
    return [entry[1] for kind in sorted(data) for entry in data[kind]]


def _bad_url(url: str) -> str:
    """Why a relative URL cannot be followed from file://, or "" when it can."""
    parts = urlsplit(url)
    if parts.scheme:
        return f"scheme {parts.scheme}: in a link"
    if parts.netloc:
        return "another site"
    if url.startswith("/"):
        return "absolute path: breaks from file://"
    return ""


def _regular_files(root: Path) -> set[str]:
    """The site-relative paths of the site's files that are not symbolic links."""
    found: set[str] = set()
    for folder, _dirs, names in os.walk(root):
        for name in names:
            path = os.path.join(folder, name)
            if not os.path.islink(path):
                found.add(os.path.relpath(path, root).replace(os.sep, "/"))
    return found


def check_site(root: Path) -> Report:
    """Check every ``*.html`` file under ``root``."""
    root = root.resolve()
    report = Report()
    parsed: dict[Path, _Page] = {}
    checked: set[tuple[Path, Path]] = set()

    def page(path: Path) -> _Page:
        if path not in parsed:
            parsed[path] = _parse(path)
        return parsed[path]

    files = _regular_files(root)
    for html in sorted(root.rglob("*.html")):
        report.pages += 1
        rel = html.relative_to(root).as_posix()
        folder = posixpath.dirname(rel)
        for _tag, url, line in page(html).links:
            report.links += 1
            parts = urlsplit(url)
            if parts.scheme in OUTSIDE or (parts.netloc and not parts.scheme):
                report.outside += 1
                continue
            if parts.scheme:
                report.broken.append(Broken(rel, line, url, f"scheme {parts.scheme}: in a link"))
                continue
            if url.startswith("/"):
                report.broken.append(Broken(rel, line, url, "absolute path: breaks from file://"))
                continue
            found = (
                posixpath.normpath(posixpath.join(folder, unquote(parts.path)))
                if parts.path
                else rel
            )
            if parts.path and found not in files:  # else no system call: the common case
                target = (html.parent / unquote(parts.path)).resolve()
                if target != root and root not in target.parents:
                    report.broken.append(Broken(rel, line, url, "points outside the site"))
                    continue
                if target.is_dir():
                    why = "a folder: no index.html from file://"
                    report.broken.append(Broken(rel, line, url, why))
                    continue
                if not target.is_file():
                    report.broken.append(Broken(rel, line, url, "no such file"))
                    continue
                found = target.relative_to(root).as_posix()
            report.targets.add(found)
            if parts.fragment and found.endswith(".html"):
                fragment = unquote(parts.fragment)
                if fragment not in page(root / found).ids:
                    report.broken.append(Broken(rel, line, url, f"no id {fragment!r} there"))
        for index, base, line in page(html).indexes:
            _check_index(root, html, index, base, line, report, checked)
    return report


def _check_index(
    root: Path,
    html: Path,
    index: str,
    base: str,
    line: int,
    report: Report,
    checked: set[tuple[Path, Path]],
) -> None:
    """The pages a search index lists, resolved against the form's data-root, once per index
    file and root folder (the index is shared by every page)."""
    script = (html.parent / unquote(urlsplit(index).path)).resolve()
    folder = (html.parent / unquote(base)).resolve() if base else html.parent
    rel = html.relative_to(root).as_posix()
    if _bad_url(base) or (folder != root and root not in folder.parents):
        report.broken.append(Broken(rel, line, base, "data-root outside the site"))
        return
    if not script.is_file() or (script, folder) in checked:
        return  # a missing script is reported as a broken data-index link
    checked.add((script, folder))
    try:
        paths = search_index_paths(script)
    except (ValueError, IndexError, TypeError, OSError) as err:
        report.broken.append(Broken(rel, line, index, f"unreadable search index: {err}"))
        return
    where = f"{script.relative_to(root).as_posix()} (from {rel})"
    for path in paths:
        report.links += 1
        reason = _bad_url(path) if isinstance(path, str) else "not a path"
        if not reason:
            target = (folder / unquote(urlsplit(path).path)).resolve()
            if target != root and root not in target.parents:
                reason = "points outside the site"
            elif not target.is_file():
                reason = "no such file"
            else:
                report.targets.add(target.relative_to(root).as_posix())
        if reason:
            report.broken.append(Broken(where, 0, str(path), f"search index: {reason}"))


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: python -m tests.linkcheck OUTPUT_DIR", file=sys.stderr)
        return 2
    report = check_site(Path(argv[0]))
    for b in report.broken:
        print(b)
    print(
        f"{report.pages} pages, {report.links} links ({report.outside} to other sites), "
        f"{len(report.broken)} broken."
    )
    return 1 if report.broken else 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))


# --- a small DOM, for the structure checks of the tests -----------------------------------

VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "wbr"}


@dataclass(eq=False)
class Element:
    tag: str
    attrs: dict[str, str]
    parent: Element | None = None
    children: list[Element | str] = field(default_factory=list)

    def iter(self, tag: str | None = None) -> list[Element]:
        """Every descendant element (depth first), optionally only of ``tag``."""
        out: list[Element] = []
        for c in self.children:
            if isinstance(c, Element):
                if tag is None or c.tag == tag:
                    out.append(c)
                out.extend(c.iter(tag))
        return out

    def text(self) -> str:
        return "".join(c if isinstance(c, str) else c.text() for c in self.children)

    def classes(self) -> set[str]:
        return set(self.attrs.get("class", "").split())

    def following(self) -> list[Element]:
        """The element's later siblings."""
        if self.parent is None:
            return []
        siblings = [c for c in self.parent.children if isinstance(c, Element)]
        return siblings[siblings.index(self) + 1 :]


class _DomBuilder(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.root = Element("#document", {})
        self.stack = [self.root]

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        el = Element(tag, {k: v or "" for k, v in attrs}, self.stack[-1])
        self.stack[-1].children.append(el)
        if tag not in VOID:
            self.stack.append(el)

    def handle_endtag(self, tag: str) -> None:
        for i in range(len(self.stack) - 1, 0, -1):
            if self.stack[i].tag == tag:
                del self.stack[i:]
                return

    def handle_data(self, data: str) -> None:
        self.stack[-1].children.append(data)


def parse_dom_text(html: str) -> Element:
    builder = _DomBuilder()
    builder.feed(html)
    builder.close()
    return builder.root


def parse_dom(path: Path) -> Element:
    return parse_dom_text(path.read_text(encoding="utf-8"))


HEADINGS = ("h1", "h2", "h3", "h4", "h5", "h6")


def beside(table: Element) -> list[Element]:
    """The elements after a table (after its ``div.scroll``), up to the next heading or table:
    where its downloads and their legend belong."""
    anchor = table
    while anchor.parent is not None and "scroll" in anchor.parent.classes():
        anchor = anchor.parent
    found: list[Element] = []
    for sib in anchor.following():
        if sib.tag in (*HEADINGS, "table") or sib.iter("table"):
            break
        if any(h.tag in HEADINGS for h in sib.iter()):
            break
        found.append(sib)
    return found


def downloads_near(table: Element) -> list[str]:
    """The download links of a table: its ``data-downloads``, or the ``a.download`` links
    beside it (:func:`beside`)."""
    listed = table.attrs.get("data-downloads", "").split()
    if listed:
        return listed
    found: list[str] = []
    for el in beside(table):
        found += [
            a.attrs.get("href", "")
            for a in [el, *el.iter("a")]
            if a.tag == "a" and "download" in a.classes()
        ]
    return found
