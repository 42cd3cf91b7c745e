"""Developer tasks: `nox -s tests`, `nox -s lint`, `nox -s types`, `nox -s site`, `nox -s bench`."""

from __future__ import annotations

import nox

nox.options.sessions = ["lint", "types", "tests"]
nox.options.reuse_existing_virtualenvs = True


@nox.session
def tests(session: nox.Session) -> None:
    session.install("-e", ".[test,distributed]")
    # As the README's test command: one process per core, each file's tests in one of them.
    args = session.posargs or ["-n", "auto", "--maxprocesses", "4", "--dist", "loadfile"]
    session.run("pytest", *args)


@nox.session
def lint(session: nox.Session) -> None:
    session.install("ruff")
    session.run("ruff", "check", "site_builder", "tests", "bench", "noxfile.py", "tools")
    session.run("ruff", "format", "--check", "--diff", "site_builder", "tests", "bench")


@nox.session
def types(session: nox.Session) -> None:
    session.install("-e", ".[dev]")
    session.run("mypy")


@nox.session
def site(session: nox.Session) -> None:
    """Build the demo site from content/ into output/."""
    session.install("-e", ".")
    session.run("site-builder", "build", *session.posargs)


@nox.session
def bench(session: nox.Session) -> None:
    """Benchmarks; each prints the ratio it is judged by."""
    session.install("-e", ".[distributed,test]")  # psutil: the scale bench's process-tree RSS
    session.run("python", "-m", "bench", *session.posargs)
