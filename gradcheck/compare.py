"""Tolerances per dtype, and the comparison of two Jacobian blocks.

An element fails when |actual - expected| > atol + rtol * |expected|.
The tolerance belongs to the dtype of the gradient under test: the reference
is computed in float64 where the function allows it, so these figures bound
the error of the gradient itself, not of the finite differences.
"""
import dataclasses

import numpy as np

# dtype of the gradient under test: (atol, rtol). Keep the README table in step.
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


def _pick(override, dtype, default):
    if override is None:
        return default
    if isinstance(override, dict):
        return override.get(dtype, default)
    return float(override)


@dataclasses.dataclass
class BlockComparison:
    n_total: int
    n_failed: int
    n_unreliable: int  # reference not finite there: left out of the verdict
    n_kinks: int  # on a kink or step: left out of the verdict
    max_abs_error: float
    max_rel_error: float
    worst: tuple  # (row, column) of the element closest to failing, or None
    worst_actual: float
    worst_expected: float

    @property
    def ok(self):
        all_unreliable = self.n_total > 0 and self.n_unreliable == self.n_total
        return self.n_failed == 0 and not all_unreliable


def compare_block(actual, expected, atol, rtol, kinks=None):
    """Compare two (rows, columns) float64 arrays element by element; entries
    where `kinks` is True are left out."""
    if actual.size == 0:
        return BlockComparison(0, 0, 0, 0, 0.0, 0.0, None, np.nan, np.nan)
    on_kink = np.zeros(actual.shape, dtype=bool) if kinks is None else kinks
    reliable = np.isfinite(expected) & ~on_kink
    with np.errstate(invalid="ignore", over="ignore"):
        abs_error = np.where(reliable, np.abs(actual - expected), 0.0)
        abs_error = np.where(reliable & ~np.isfinite(actual), np.inf, abs_error)
        allowed = atol + rtol * np.abs(np.where(reliable, expected, 0.0))
        # Relative to the reference, or to atol where the reference is ~0.
        rel_error = abs_error / np.maximum(np.abs(np.where(reliable, expected, 0.0)), atol)
        badness = abs_error / allowed
    failed = badness > 1.0
    worst = np.unravel_index(int(np.argmax(np.where(reliable, badness, -1.0))), actual.shape)
    return BlockComparison(
        n_total=int(actual.size),
        n_failed=int(failed.sum()),
        n_unreliable=int((~np.isfinite(expected)).sum()),
        n_kinks=int((on_kink & np.isfinite(expected)).sum()),
        max_abs_error=float(abs_error.max()),
        max_rel_error=float(rel_error.max()),
        worst=tuple(int(i) for i in worst),
        worst_actual=float(actual[worst]),
        worst_expected=float(expected[worst]),
    )
