"""Large arrays on ordinary pages while a check runs.

A check makes and drops many short-lived arrays of up to 128 MB (a 4000 x 4000
Jacobian). NumPy asks Linux for transparent huge pages for every array of
4 MB or more (madvise). Where the kernel answers such requests by compacting
memory on the spot (its THP defrag setting "madvise", "defer+madvise" or
"always", the first being the default of many distributions), a request can
stall for tenths of a second: on a 2-core VM, a float64 check of an
elementwise function of 4000 inputs took 0.16 to 0.62 s (kernel time 0.01 to
0.47 s) with huge pages and 0.20 to 0.23 s without. The user's setting is put
back when the check ends.
"""
import contextlib
import functools

_DEFRAG = "/sys/kernel/mm/transparent_hugepage/defrag"
_STALLING = {"always", "defer+madvise", "madvise"}


@contextlib.contextmanager
def ordinary_pages():
    """NumPy's huge-page requests off, where the kernel would stall on them."""
    toggle = _huge_page_toggle() if _requests_stall() else None
    if toggle is None:
        yield
        return
    previous = toggle(False)
    try:
        yield
    finally:
        toggle(previous)


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
