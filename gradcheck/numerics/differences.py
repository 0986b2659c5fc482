"""One input's finite differences: central differences at steps h and h/2
combined by Richardson extrapolation, at two step scales (see
docs/verdict.md), and sharpened at smaller steps where a gradient disagrees."""
import dataclasses

import numpy as np

from gradcheck import progress
from gradcheck.numerics import layout
from gradcheck.numerics.dtypes import finfo
from gradcheck.numerics.richardson import (
    OFFSETS,
    extrapolated,
    kinks_at,
    one_sided_bounds,
    rounding_floor,
)

# An estimate above this (relative to max(|value|, 1)) sends the column to the
# second, smaller step scale.
RETRY_ESTIMATE = 1e-5
# Steps a few percent apart, not multiples of a power of 2, whose Richardson values
# differ by rounding noise alone (docs/verdict.md: "Rounding noise of a float32 reference").
_JITTERS = (1.07, 1.13, 1.19, 1.23, 1.29, 1.31, 1.37)
# Student's t for 7 degrees of freedom: a right entry fails about once in 270,000.
_NOISE_QUANTILE = 13.0
_BLOCK_ENTRIES = 1 << 15  # columns are extrapolated in pieces that stay in cache


@dataclasses.dataclass(frozen=True, eq=False)
class InputDifferences:
    """How input i's columns are differenced. `evaluate(i, batch)` runs the
    function on a batch of values of input i; `f0` is every output's real
    components at the inputs; `steps` (scales, elements) comes from
    richardson.step_scales; `chunk` columns go in one vectorised call."""

    evaluate: object
    i: int
    x: np.ndarray
    steps: np.ndarray
    precision: str
    chunk: int
    f0: np.ndarray

    @property
    def x_real(self):
        return layout.real_view(self.x)

    def by_columns(self, columns):
        """(outputs, len(columns)) values and kinks, and the kinks' bounds or None,
        laid out like the Jacobian blocks (comparisons of mixed layouts are far
        slower), a chunk at a time."""
        values = np.empty((self.f0.size, len(columns)))
        kinks = np.empty((self.f0.size, len(columns)), dtype=bool)
        bounds = None  # (2, outputs, columns) once some entry is on a kink: see one_sided_bounds
        for start in range(0, len(columns), self.chunk):
            value, _, kink, sides = self._columns(columns[start:start + self.chunk])
            here = slice(start, start + len(value))
            values[:, here] = value.T
            kinks[:, here] = kink.T
            if kink.any():
                bounds = with_columns(bounds, here, sides.transpose(0, 2, 1), values.shape)
            progress.advance(progress.COLUMNS, len(value))
        return values, kinks, bounds

    def _columns(self, columns):
        """Richardson-extrapolated derivatives for some real components, their
        error estimates, and where they sit on a kink. Every column is tried at
        the first step scale; only columns whose estimate is poor (near a pole
        or a domain edge) are tried again at the second."""
        steps = self.steps
        value, error, kink, sides = self._at_scale(steps[0], columns, self.chunk)
        if steps.shape[0] == 1:
            return value, error, kink, sides
        poor = ~np.all(error <= RETRY_ESTIMATE * np.maximum(np.abs(value), 1.0), axis=1)
        retry = poor & (steps[1][columns] != steps[0][columns])
        if retry.any():
            v2, e2, k2, s2 = self._at_scale(steps[1], columns[retry], self.chunk)
            better = e2 < error[retry]
            value[retry] = np.where(better, v2, value[retry])
            error[retry] = np.where(better, e2, error[retry])
            kink[retry] = np.where(better, k2, kink[retry])
            sides = _chosen_sides(sides, retry, better, s2, value.shape)
        return value, error, kink, sides

    def sharpened(self, columns):
        """(cols, out) values, their uncertainty and kinks, for columns where a
        gradient disagrees with the first differences.

        Each column is extrapolated again from steps h/2 and h/4, at whichever
        step scale agrees best with its extrapolation from h and h/2; twice the
        two estimates' distance bounds the error, never taken below what
        rounding the outputs alone can do (rounding_floor). Below float64 the
        evaluations' own noise is measured too (_with_noise)."""
        columns = np.asarray(columns)
        best, chosen = None, None
        for h in self.steps:
            coarse, _, _, _ = self._at_scale(h, columns, len(columns))
            fine, _, kink, sides = self._at_scale(h / 2, columns, len(columns))
            with np.errstate(invalid="ignore"):
                spread = 2.0 * np.abs(fine - coarse)
                spread = np.maximum(spread, rounding_floor(fine, self.f0, h[columns] / 2,
                                                           self.precision))
            spread = np.where(np.isfinite(spread), spread, np.inf)
            if best is None:
                best, chosen = [fine, spread, kink, sides], h.copy()
                continue
            better = spread.max(axis=1) < best[1].max(axis=1)
            for n, candidate in enumerate((fine, spread, kink)):
                best[n][better] = candidate[better]
            chosen[columns[better]] = h[columns[better]]
            best[3] = _chosen_sides(best[3], better, True,
                                    None if sides is None else sides[:, better], fine.shape)
        if finfo(self.precision).eps > finfo("float64").eps:
            best[0], best[1] = self._with_noise(chosen / 2, columns, *best[:2])
            if best[3] is not None:
                # Noise can make an entry look like a kink; its mean value, as
                # uncertain as any other, is as good a bound as one step's sides.
                kinked, value = best[2], best[0]
                best[3][0][kinked] = np.fmin(best[3][0][kinked], value[kinked])
                best[3][1][kinked] = np.fmax(best[3][1][kinked], value[kinked])
        return tuple(best)

    def _with_noise(self, h, columns, value, spread):
        """(value, spread) from the mean of the Richardson values at h and at h
        times each of _JITTERS, and an uncertainty at least _NOISE_QUANTILE times
        the mean's standard error (a running mean and sum of squares: the values
        are as large as the columns of the Jacobian)."""
        mean, squares = value.copy(), np.zeros_like(value)
        order = np.random.default_rng(0)
        for n, jitter in enumerate(_JITTERS, start=2):
            # Each column at another place in the batch: batched kernels round
            # differently at different places.
            shuffle = order.permutation(len(columns))
            sample = np.empty_like(value)
            sample[shuffle], _, _, _ = self._at_scale(h * jitter, columns[shuffle], len(columns))
            with np.errstate(invalid="ignore"):
                delta = sample - mean
                mean += delta / n
                squares += delta * (sample - mean)
        count = len(_JITTERS) + 1
        with np.errstate(invalid="ignore"):
            noise = _NOISE_QUANTILE * np.sqrt(squares / ((count - 1) * count))
        # A step that met a NaN or an infinity (a domain edge) says nothing of the
        # noise: those entries keep their first estimate.
        measured = np.isfinite(noise)
        return np.where(measured, mean, value), np.where(measured, np.maximum(spread, noise), spread)

    def _at_scale(self, h, columns, chunk):
        """(cols, out) derivatives, estimates and kinks, with steps h[column].

        The columns are padded to `chunk` (repeating the first), so that every call
        has the same shape and the vectorised function is traced once."""
        x_real, f0 = self.x_real, self.f0
        wanted = len(columns)
        columns = np.concatenate([columns, np.repeat(columns[:1], chunk - wanted)])
        n_cols = len(columns)
        batch_real = np.broadcast_to(x_real, (len(OFFSETS), n_cols, x_real.size)).copy()
        col_axis = np.arange(n_cols)
        batch_real[:, col_axis, columns] += (h[columns][None] * OFFSETS[:, None]).astype(x_real.dtype)
        # The step actually taken, after rounding x + h to the input's precision.
        taken = (batch_real[:, col_axis, columns].astype(np.float64)
                 - x_real[columns].astype(np.float64))
        batch = layout.from_real_view(batch_real.reshape(-1, x_real.size), self.x.dtype, self.x.shape)
        del batch_real
        results = [layout.real_view_batch(r).astype(np.float64, copy=False)
                   for r in self.evaluate(self.i, batch)]
        y = results[0] if len(results) == 1 else np.concatenate(results, axis=1)
        y = y.reshape(len(OFFSETS), n_cols, -1)
        value, estimate = np.empty((wanted, f0.size)), np.empty((wanted, f0.size))
        kink = np.empty((wanted, f0.size), dtype=bool)
        sides = None  # (2, cols, out) once an entry is on a kink; read only there
        block = max(1, _BLOCK_ENTRIES // max(f0.size, 1))
        for start in range(0, wanted, block):
            piece = slice(start, min(start + block, wanted))
            value[piece], estimate[piece], kink[piece] = _richardson(
                y[:, piece], taken[:, piece], f0, self.precision)
            if kink[piece].any():
                sides = np.empty((2, wanted, f0.size)) if sides is None else sides
                sides[:, piece][:, kink[piece]] = one_sided_bounds(y[:, piece], taken[:, piece],
                                                                   f0, kink[piece])
        return value, estimate, kink, sides


def one_column(outputs_at, x_real, c, steps, f0, precision):
    """Full mode's finite differences for real component c alone, one perturbed
    input at a time (`outputs_at(x_real)`: every output's real components), for
    fast mode's localisation: (value, estimate, kink, (low, high)) per output,
    low == high == value off the kinks."""
    value, estimate, kink, bounds = _one_column_at(outputs_at, x_real, c, steps[0][c], f0, precision)
    poor = ~np.all(estimate <= RETRY_ESTIMATE * np.maximum(np.abs(value), 1.0))
    if steps.shape[0] > 1 and poor and steps[1][c] != steps[0][c]:
        second = _one_column_at(outputs_at, x_real, c, steps[1][c], f0, precision)
        better = second[1] < estimate
        value, estimate, kink = (np.where(better, new, old) for new, old in
                                 zip(second[:3], (value, estimate, kink)))
        bounds = np.where(better, second[3], bounds)
    return value, estimate, kink, bounds


def _one_column_at(outputs_at, x_real, c, h, f0, precision):
    ys, taken = [], []
    for offset in OFFSETS:
        x = x_real.copy()
        x[c] += offset * h
        taken.append(float(x[c]) - float(x_real[c]))  # after rounding to x's dtype
        ys.append(outputs_at(x))
    y, taken = np.stack(ys)[:, None, :], np.array(taken)[:, None]
    value, estimate, kink = (a[0] for a in _richardson(y, taken, f0, precision))
    bounds = np.stack([value, value])
    if kink.any():
        bounds[:, kink] = one_sided_bounds(y, taken, f0, kink[None])
    return value, estimate, kink, bounds


def with_columns(sides, columns, new, shape):
    """`sides` (2, *shape) with `new` written at `columns`, made on first need:
    None stands for a block with no kink yet, whose bounds nothing reads."""
    if new is None:
        return sides
    if sides is None:
        sides = np.empty((2,) + shape)
    sides[:, :, columns] = new
    return sides


def _chosen_sides(sides, rows, better, new, shape):
    """`sides` with `new` where `better` at `rows`; either may be None (no kink)."""
    if new is None:
        return sides
    if sides is None:
        sides = np.empty((2,) + shape)
    sides[:, rows] = np.where(better, new, sides[:, rows])
    return sides


def _richardson(y, taken, f0, precision):
    """(cols, out) Richardson values, their estimates and kinks, from the
    outputs y[offset, column] at the steps `taken`."""
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        value, spread = extrapolated(y, taken[:, :, None])
        estimate = np.abs(spread)
    # A finite value means a finite estimate too (inf - inf is not finite).
    finite = np.isfinite(value)
    if not finite.all():
        value[~finite], estimate[~finite] = np.nan, np.inf
    return value, estimate, kinks_at(y, taken, f0, precision)
