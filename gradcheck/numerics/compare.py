"""Tolerances per dtype, and the comparison of two Jacobian blocks.

An element fails when |actual - expected| > atol + rtol * |expected|.
The tolerance belongs to the dtype of the gradient under test: the reference
is computed in float64 where the function allows it, so these figures bound
the error of the gradient itself, not of the finite differences.
"""
import dataclasses
import math
import numbers
from collections.abc import Mapping

import numpy as np

from gradcheck.errors import OptionError
from gradcheck.numerics.dtypes import coarsest, dtype_name

# dtype of the gradient under test: (atol, rtol). Keep the table in docs/verdict.md in step.
TOLERANCES = {
    "float16": (1e-2, 1e-2),
    "bfloat16": (1e-1, 5e-2),
    "float32": (1e-4, 1e-4),
    "float64": (1e-8, 1e-7),
    "complex64": (1e-4, 1e-4),
    "complex128": (1e-8, 1e-7),
}


def tolerance_for(dtype, atol=None, rtol=None):
    """(atol, rtol) for a gradient of `dtype`; `atol`/`rtol` may be numbers or
    dicts from dtype name to number."""
    default_atol, default_rtol = TOLERANCES[dtype]
    return _pick(atol, dtype, default_atol), _pick(rtol, dtype, default_rtol)


def checked_tolerance(name, value):
    """`value` as a tolerance override: None, a number, or a dict keyed by dtype
    names (from any dtype-like key). Refuses what would pass every gradient."""
    if value is None:
        return None
    if isinstance(value, Mapping):
        return {_tolerance_key(name, key): nonnegative_number(f"{name}[{key!r}]", number)
                for key, number in value.items()}
    return nonnegative_number(name, value)


def _tolerance_key(name, key):
    try:
        dtype = dtype_name(key)
    except TypeError:
        dtype = None
    if dtype not in TOLERANCES:
        raise OptionError(f"{name} has the key {key!r}, which is not a floating or complex dtype; "
                          f"use some of {', '.join(TOLERANCES)}.")
    return dtype


def nonnegative_number(name, value):
    """`value` as a float, refused unless a finite real >= 0; `name` says whose."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise OptionError(f"{name} must be a number (or, for atol and rtol, a dict from dtype "
                          f"to number), got {value!r}.")
    if not math.isfinite(value) or value < 0:
        raise OptionError(f"{name} must be a finite number >= 0, got {value!r}: a negative or "
                          "NaN tolerance would let every gradient pass.")
    return float(value)


def _pick(override, dtype, default):
    if override is None:
        return default
    if isinstance(override, dict):
        return override.get(dtype, default)
    return float(override)


@dataclasses.dataclass(frozen=True)
class Tolerances:
    """The user's atol/rtol overrides and the dtype the function computes in:
    the one rule for what error a gradient is allowed."""

    atol: object = None
    rtol: object = None
    computed_in: str = None  # the dtype a function casts its float64 inputs to, if any

    def of_dtype(self, dtype):
        return tolerance_for(dtype, self.atol, self.rtol)

    def of_pair(self, input_dtype, *output_dtypes):
        """(atol, rtol) for d(outputs) / d(input): the input dtype's, unless the
        outputs or the function's own arithmetic are coarser (d float32 / d float64
        is only as precise as float32)."""
        precision = coarsest(input_dtype, *output_dtypes, self.computed_in or input_dtype)
        return self.of_dtype(_like(input_dtype, precision))


def _like(dtype, precision):
    """`precision` (a real dtype name), complex if `dtype` is."""
    if dtype.startswith("complex") and not precision.startswith("complex"):
        return {"float64": "complex128"}.get(precision, "complex64")
    return precision


def outside_interval(value, low, high):
    """How far `value` lies outside [low, high] (0 inside); infinite where any
    of them is NaN, so that a NaN gradient or bound always fails."""
    with np.errstate(invalid="ignore"):
        distance = np.maximum(np.maximum(np.subtract(low, value), np.subtract(value, high)), 0.0)
    return np.where(np.isnan(distance), np.inf, distance)


@dataclasses.dataclass
class BlockComparison:
    n_total: int
    n_failed: int
    n_unreliable: int  # reference not finite there: left out of the verdict
    n_kinks: int  # on a kink or step: judged against the one-sided differences
    max_abs_error: float
    max_rel_error: float
    worst: tuple  # (row, column) of the element closest to failing, or None
    worst_actual: float
    worst_expected: float
    worst_slack: float = 0.0  # the reference's uncertainty at the worst entry
    worst_bounds: tuple = None  # (least, greatest) one-sided difference, if it is on a kink
    n_inconclusive: int = 0  # within the reference's uncertainty, but beyond its bound
    decided: bool = True  # some judged entry is nonzero in either array
    unchecked: tuple = None  # (row, column) of the first entry left out as unreliable

    @property
    def ok(self):
        return self.n_failed == 0 and self.n_inconclusive == 0 and not self.undecided

    @property
    def undecided(self):
        """Entries were left out, and the judged ones are all zero in both arrays."""
        return self.n_unreliable > 0 and not self.decided


_CHUNK_ENTRIES = 1 << 18  # rows are compared in pieces that stay in cache


def compare_block(actual, expected, atol, rtol, kinks=None, support=None, exact_nonfinite=False,
                  slack=None, bounds=None):
    """Compare two (rows, columns) float64 arrays element by element; entries
    where the reference is not finite are left out, and so are those where
    `kinks` is True unless `bounds` says what they must lie between.

    With `exact_nonfinite` (two gradients compared with each other) a NaN or an
    infinity is not left out: it must be matched by the same value.

    `support`, if given, is the (rows, columns) index arrays of the only entries
    where either array can be nonzero: the others are equal and are skipped.
    `slack`, if given, is the reference's own uncertainty at each entry (see
    differences.sharpened): it is added to the entry's allowed error up to the
    tolerance of the block's largest entry (rounding at that scale is what the
    dtype resolves); an entry that passes only on more is counted inconclusive,
    and one beyond even the whole slack fails.
    `bounds`, if given with `kinks`, is the (2, rows, columns) least and
    greatest one-sided difference (see richardson.one_sided_bounds): a kink entry is then
    judged, not left out: it passes when the gradient lies between them, within
    atol + rtol * max(|least|, |greatest|)."""
    if actual.size == 0:
        return BlockComparison(0, 0, 0, 0, 0.0, 0.0, None, np.nan, np.nan)
    if support is not None:
        return _compare_on_support(actual, expected, atol, rtol, kinks, support, exact_nonfinite,
                                   slack, bounds)
    if exact_nonfinite and kinks is None and slack is None and np.array_equal(actual, expected):
        # Two modes that computed the very same Jacobian (the common case).
        return BlockComparison(int(actual.size), 0, 0, 0, 0.0, 0.0, (0, 0),
                               float(actual.flat[0]), float(expected.flat[0]))
    rows_per_chunk = max(1, _CHUNK_ENTRIES // max(actual.shape[1], 1))
    totals = _Totals(exact_nonfinite, slack_bound(expected, atol, rtol, slack))
    for start in range(0, actual.shape[0], rows_per_chunk):
        piece = slice(start, start + rows_per_chunk)
        totals.add(start, actual[piece], expected[piece], atol, rtol,
                   None if kinks is None else kinks[piece], None if slack is None else slack[piece],
                   None if bounds is None or kinks is None else bounds[:, piece])
    return totals.result(actual, expected, totals.worst, kinks, bounds)


def _compare_on_support(actual, expected, atol, rtol, kinks, support, exact_nonfinite, slack,
                        bounds=None):
    rows, columns = support
    totals = _Totals(exact_nonfinite, slack_bound(expected[rows, columns], atol, rtol, slack))
    if rows.size:
        totals.add(0, actual[rows, columns][None], expected[rows, columns][None], atol, rtol,
                   None if kinks is None else kinks[rows, columns][None],
                   None if slack is None else slack[rows, columns][None],
                   None if bounds is None or kinks is None else bounds[:, rows, columns][:, None])
        entry = totals.worst[1]
        if totals.unchecked is not None:
            first = totals.unchecked[1]
            totals.unchecked = (int(rows[first]), int(columns[first]))
        return totals.result(actual, expected, (int(rows[entry]), int(columns[entry])), kinks,
                             bounds)
    return totals.result(actual, expected, (0, 0))


def slack_bound(expected, atol, rtol, slack):
    """The most of the reference's uncertainty an entry may count: the tolerance
    of the largest finite entry of `expected`. None without `slack`."""
    if slack is None:
        return None
    finite = np.abs(expected[np.isfinite(expected)])
    return atol + rtol * (float(finite.max()) if finite.size else 0.0)


def judge_kinks(actual, where, bounds, abs_error, magnitude):
    """On the entries `where`, the error becomes how far the gradient lies
    outside [least, greatest] of the one-sided differences, and the magnitude
    the larger of their sizes (in place)."""
    lo, hi, gradient = bounds[0][where], bounds[1][where], actual[where]
    abs_error[where] = outside_interval(gradient, lo, hi)
    magnitude[where] = np.maximum(np.abs(lo), np.abs(hi))


class _Totals:
    def __init__(self, exact_nonfinite=False, slack_bound=None):
        self.exact_nonfinite, self.slack_bound = exact_nonfinite, slack_bound
        self.failed = self.unreliable = self.kinks = self.inconclusive = 0
        self.decided, self.unchecked = False, None
        self.worst_slack = 0.0  # the uncertainty counted at the worst entry
        self.max_abs = self.max_rel = 0.0
        self.worst_badness, self.worst = -1.0, (0, 0)

    def add(self, first_row, actual, expected, atol, rtol, kinks, slack=None, bounds=None):
        with np.errstate(invalid="ignore", over="ignore"):
            abs_error = np.abs(actual - expected)
            # A finite difference means both arrays are finite there (a NaN or
            # an infinity in either makes it NaN or infinite): the common case
            # needs none of the masking below.
            judged = kinks if bounds is not None else None  # else kinks are left out
            if np.isfinite(abs_error.sum()):
                magnitude = np.abs(expected)
                on_kinks = 0 if kinks is None else int(np.count_nonzero(kinks))
                if on_kinks and judged is None:
                    self.kinks += on_kinks
                    np.copyto(abs_error, 0.0, where=kinks)
                    np.copyto(magnitude, 0.0, where=kinks)
            else:
                magnitude = self._left_out(first_row, actual, expected, abs_error,
                                           kinks if judged is None else None)
                if judged is not None:
                    judged = judged & np.isfinite(expected)
            if judged is not None and judged.any():
                self.kinks += int(np.count_nonzero(judged))
                judge_kinks(actual, judged, bounds, abs_error, magnitude)
            # Left-out entries are zero in both by now; any other nonzero could be wrong.
            self.decided = self.decided or bool(abs_error.any() or magnitude.any())
            self._tally(first_row, abs_error, magnitude, atol, rtol, slack)

    def _left_out(self, first_row, actual, expected, abs_error, kinks):
        """Zero the error and magnitude where the entry is left out (a reference
        that is not finite, a kink); a NaN gradient fails. Returns |expected|."""
        finite_reference = np.isfinite(expected)
        left_out = np.zeros_like(finite_reference) if self.exact_nonfinite else ~finite_reference
        self.unreliable += int(np.count_nonzero(left_out))
        if self.unchecked is None and left_out.any():
            self.unchecked = np.unravel_index(int(np.argmax(left_out)), left_out.shape)
            self.unchecked = (first_row + int(self.unchecked[0]), int(self.unchecked[1]))
        if kinks is not None:
            self.kinks += int(np.count_nonzero(kinks & finite_reference))
            left_out |= kinks
        magnitude = np.abs(expected)
        if self.exact_nonfinite:
            same = (actual == expected) | (np.isnan(actual) & np.isnan(expected))
            abs_error[same & ~finite_reference] = 0.0
            magnitude[~finite_reference] = 0.0
        abs_error[np.isnan(abs_error)] = np.inf  # a NaN gradient fails
        abs_error[left_out] = 0.0
        magnitude[left_out] = 0.0
        return magnitude

    def _tally(self, first_row, abs_error, magnitude, atol, rtol, slack):
        """Count failures and keep the worst entry; `magnitude` is used up."""
        with np.errstate(invalid="ignore", over="ignore"):
            allowed = magnitude * rtol
            allowed += atol
            failed = None
            if slack is not None:
                failed = int(np.count_nonzero(abs_error > allowed + slack))
                # An entry that passes only on more uncertainty than the bound
                # is inconclusive, not right.
                usable = np.minimum(slack, self.slack_bound)
                allowed += usable
            badness = np.divide(abs_error, allowed, out=allowed)
            beyond = int(np.count_nonzero(badness > 1.0))
            self.failed += beyond if failed is None else failed
            self.inconclusive += 0 if failed is None else beyond - failed
            flat = int(np.argmax(badness))
            if badness.flat[flat] > self.worst_badness:
                self.worst_badness = float(badness.flat[flat])
                row, col = np.unravel_index(flat, badness.shape)
                self.worst = (first_row + int(row), int(col))
                self.worst_slack = 0.0 if slack is None else float(usable[row, col])
            self.max_abs = max(self.max_abs, float(abs_error.max()))
            # Relative to the reference, or to atol where the reference is ~0.
            rel_error = np.divide(abs_error, np.maximum(magnitude, atol, out=magnitude),
                                  out=magnitude)
            self.max_rel = max(self.max_rel, float(rel_error.max()))

    def result(self, actual, expected, worst, kinks=None, bounds=None):
        row, col = worst
        on_kink = kinks is not None and bounds is not None and bool(kinks[row, col])
        return BlockComparison(
            n_inconclusive=self.inconclusive, decided=self.decided, unchecked=self.unchecked,
            worst_slack=self.worst_slack,
            worst_bounds=(float(bounds[0, row, col]), float(bounds[1, row, col])) if on_kink else None,
            n_total=int(actual.size), n_failed=self.failed, n_unreliable=self.unreliable,
            n_kinks=self.kinks, max_abs_error=self.max_abs, max_rel_error=self.max_rel,
            worst=(row, col), worst_actual=float(actual[row, col]),
            worst_expected=float(expected[row, col]),
        )
