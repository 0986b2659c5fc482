"""Large arrays on ordinary pages while a check runs.

A check makes and drops many short-lived large arrays, and where the kernel
compacts memory to answer NumPy's huge-page requests, each can stall for
tenths of a second (measurements in docs/benchmarks.md). The user's setting
is put back when the last check running ends (checks may overlap in threads).
"""
import contextlib
import functools
import threading

_DEFRAG = "/sys/kernel/mm/transparent_hugepage/defrag"
_STALLING = {"always", "defer+madvise", "madvise"}

_lock = threading.Lock()
_running = 0  # checks inside ordinary_pages, in any thread
_users_setting = None  # saved by the first of them, put back by the last


@contextlib.contextmanager
def ordinary_pages():
    """NumPy's huge-page requests off, where the kernel would stall on them."""
    toggle = _huge_page_toggle() if _requests_stall() else None
    if toggle is None:
        yield
        return
    _enter(toggle)
    try:
        yield
    finally:
        _leave(toggle)


def _enter(toggle):
    global _running, _users_setting
    with _lock:
        if _running == 0:
            _users_setting = toggle(False)
        _running += 1


def _leave(toggle):
    global _running
    with _lock:
        _running -= 1
        if _running == 0:
            toggle(_users_setting)


@functools.cache
def _requests_stall():
    """Whether the kernel compacts memory at once for a madvised huge page."""
    try:
        with open(_DEFRAG) as settings:
            chosen = settings.read().split("[")[1].split("]")[0]
    except (OSError, IndexError):
        return False  # not Linux, or no transparent huge pages
    return chosen in _STALLING


def _huge_page_toggle():
    """numpy's switch (what NUMPY_MADVISE_HUGEPAGE sets at import): it takes
    the new setting and returns the old one. None if this NumPy has none."""
    try:
        from numpy._core import multiarray
    except ImportError:  # NumPy 1
        from numpy.core import multiarray
    return getattr(multiarray, "_set_madvise_hugepage", None)
