"""Benchmarks: `python -m bench [name ...]` or `nox -s bench`. Each prints its judging ratio."""
