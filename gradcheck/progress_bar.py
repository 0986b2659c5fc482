"""The progress display of a long check: a tqdm bar on stderr, shown once the
check has run GRADCHECK_PROGRESS_DELAY seconds (2 by default), cleared when it
ends, however it ends.

Shown when stderr is a terminal and the check is not run by pytest, or always
with GRADCHECK_PROGRESS=1 (never with GRADCHECK_PROGRESS=0). One display at a
time in the process: the outermost check of the first thread to start one;
checks in other threads meanwhile are not shown.
"""
import contextlib
import os
import sys
import threading
import time

from gradcheck import progress

DEFAULT_DELAY = 2.0
_REFRESH = 0.1  # seconds between redraws
_showing = threading.Lock()  # held by the one check whose display may be shown


def wanted(stream=None):
    """Whether to show progress on `stream` (stderr): see the module's docstring."""
    asked = os.environ.get("GRADCHECK_PROGRESS", "").strip().lower()
    if asked in ("1", "true", "yes", "on"):
        return True
    if asked in ("0", "false", "no", "off"):
        return False
    stream = sys.stderr if stream is None else stream
    under_pytest = "PYTEST_CURRENT_TEST" in os.environ
    return not under_pytest and _is_terminal(stream)


def delay():
    try:
        return max(0.0, float(os.environ.get("GRADCHECK_PROGRESS_DELAY", DEFAULT_DELAY)))
    except ValueError:
        return DEFAULT_DELAY


@contextlib.contextmanager
def showing(description):
    """Report this thread's check on stderr while the block runs, if wanted;
    a check inside a check (or in a thread while another is shown) adds nothing."""
    if progress.current() is not None or not wanted() or not _showing.acquire(blocking=False):
        yield
        return
    bar = Bar(description, delay())
    try:
        with progress.reporting(bar):
            yield
    finally:
        bar.close()
        _showing.release()


class Bar(progress.Counts):
    """Counts that draw themselves: the bar follows the finite-difference columns
    (full mode) or the projections (fast mode), or else the modes; the other
    counts follow it as text."""

    def __init__(self, description, delay_seconds):
        super().__init__()
        self.description = description
        self._start = time.monotonic()
        self._show_at = self._start + delay_seconds
        self._drawn_at = 0.0
        self._bar = None

    def expect(self, kind, n):
        super().expect(kind, n)
        self._tick()

    def advance(self, kind, n=1):
        super().advance(kind, n)
        self._tick()

    def _tick(self):
        now = time.monotonic()
        if now < self._show_at or now - self._drawn_at < _REFRESH:
            return
        self._drawn_at = now
        self._draw()

    def _draw(self):
        if self._bar is None:
            self._bar = self._open()
            if self._bar is None:
                self._show_at = float("inf")  # no tqdm: never try again
                return
        leading = next((k for k in (progress.COLUMNS, progress.PROJECTIONS)
                        if self.counts.get(k, (0, 0))[1]), progress.MODES)
        done, total = self.counts.get(leading, (0, 0))
        self._bar.unit = " " + leading
        self._bar.total = max(total, done)
        self._bar.n = done
        self._bar.set_postfix_str(", ".join(
            f"{kind} {d}/{t}" for kind, (d, t) in self.counts.items() if kind != leading),
            refresh=False)
        self._bar.refresh()

    def _open(self):
        try:
            from tqdm import tqdm
        except ImportError:
            return None
        # A delay only to keep tqdm from drawing at once (it is drawn by _draw);
        # none once made, or tqdm's close would not clear the line.
        bar = tqdm(desc=f"gradcheck {self.description}", file=sys.stderr, leave=False,
                   dynamic_ncols=True, delay=1.0,
                   bar_format="{desc}: {n_fmt}/{total_fmt}{unit} |{bar}| [{elapsed}]{postfix}")
        bar.delay = 0.0
        return bar

    def close(self):
        """Draw the last counts (a log of a run that is not a terminal keeps them),
        then clear the line."""
        if self._bar is not None:
            self._draw()
            self._bar.close()
            self._bar = None


def _is_terminal(stream):
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False
