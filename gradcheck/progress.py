"""How far a check has got: counters the numerics and methods advance, a
chunk of work at a time, and whatever reporter the top-level check installed
(progress_bar.py) reads. Pure Python, at the bottom layer.

With no reporter installed (the default, and under pytest) `advance` and
`expect` are one thread-local look-up: no call is made per element.
The reporter is per thread: a check running in another thread reports to its
own (or to none).
"""
import contextlib
import threading

# What is counted: finite-difference columns, modes run, projections judged.
COLUMNS, MODES, PROJECTIONS = "columns", "modes", "projections"

_local = threading.local()


def expect(kind, n):
    """`n` more units of `kind` are to be done."""
    reporter = current()
    if reporter is not None:
        reporter.expect(kind, n)


def advance(kind, n=1):
    """`n` units of `kind` are done."""
    reporter = current()
    if reporter is not None:
        reporter.advance(kind, n)


def current():
    """This thread's reporter, or None."""
    return getattr(_local, "reporter", None)


@contextlib.contextmanager
def reporting(reporter):
    """Install `reporter` for this thread while the block runs (removed however it ends)."""
    previous = getattr(_local, "reporter", None)
    _local.reporter = reporter
    try:
        yield reporter
    finally:
        _local.reporter = previous


class Counts:
    """{kind: [done, total]}: what a reporter keeps."""

    def __init__(self):
        self.counts = {}

    def expect(self, kind, n):
        self.counts.setdefault(kind, [0, 0])[1] += n

    def advance(self, kind, n=1):
        self.counts.setdefault(kind, [0, 0])[0] += n
