"""Finite differences: the reference Jacobian.

Central differences at two steps h and h/2, combined by Richardson
extrapolation (error O(h^4)); |D(h/2) - D(h)| estimates the error. Each element
is tried at two step scales, one relative to max(|x|, 1) and one relative to
|x| itself (for inputs near a pole or a domain edge at zero), and keeps the
scale whose estimate is smaller. All perturbed inputs of a chunk of columns are
evaluated in one vectorised call.
"""
import dataclasses

import numpy as np

from gradcheck.numerics import compressed, layout
from gradcheck.numerics.dtypes import coarsest, finfo
from gradcheck.numerics.richardson import (
    OFFSETS,
    extrapolated,
    kinks_at,
    one_sided_bounds,
    rounding_floor,
    step_scales,
)


@dataclasses.dataclass
class Reference:
    """blocks[(k, i)]: d(output k) / d(input i) by finite differences, in real
    components; kinks[(k, i)]: entries where the one-sided differences disagree
    (a kink or a step: finite differences mean nothing there)."""

    blocks: dict
    kinks: dict
    # {input: columns whose values came from compressed (grouped) differences}
    compressed: dict = dataclasses.field(default_factory=dict)
    redo: object = None  # redo(i, columns): difference those columns one at a time
    # {(k, i): (out, n) array}: how far the sharpened entries may still be off
    uncertainty: dict = dataclasses.field(default_factory=dict)
    sharpen: object = None  # sharpen(i, columns): see sharpened()
    # {(k, i): (2, out, n) array}: on kink entries, the least and greatest of
    # the one-sided differences and their extrapolations (see one_sided_bounds)
    bounds: dict = dataclasses.field(default_factory=dict)

    def refine(self, i, columns):
        """Replace compressed columns of input i by individual differences: where a
        gradient disagrees, the pattern that grouped them may be what is wrong."""
        columns = np.intersect1d(columns, self.compressed.get(i, []))
        if columns.size:
            self.redo(i, columns)
        return columns.size


def numeric_jacobian(evaluate, inputs, wrt, outputs, base, eps=None, budget_bytes=64 << 20,
                     pattern=None, precision=None):
    """The reference Jacobian of every differentiable output w.r.t. inputs `wrt`.

    `evaluate(i, batch)` runs the function on a batch of values of input i
    (the other inputs fixed) and returns the differentiable outputs, each with
    a leading batch axis. `inputs` are the numpy values in reference precision;
    `outputs` the OutputSpecs of the differentiable outputs; `base` their
    values at the inputs. `pattern[i]`, if given, is the compressed.Sparsity
    of (outputs, columns) that the gradients under test claim: columns that
    share no row are then perturbed together (see compressed.py). `precision`,
    if given, is the dtype the function really computes in, when coarser than
    its inputs'.
    """
    f0 = np.concatenate([layout.real_view(b).astype(np.float64) for b in base]) if base else np.zeros(0)
    blocks, kinks, bounds, grouped, column_finders, stepping = {}, {}, {}, {}, {}, {}
    out_size = sum(spec.real_size for spec in outputs)
    for i in wrt:
        x = inputs[i]
        x_real = layout.real_view(x)
        # A function that computes in float32 whatever it is given (its outputs
        # say so) needs steps for float32, or rounding swamps the differences.
        step_precision = coarsest(x.dtype, precision or x.dtype, *(b.dtype for b in base))
        steps = step_scales(x_real, step_precision, eps)
        stepping[i] = steps, step_precision
        per_column = len(OFFSETS) * (x_real.size + out_size) * 8 * 4  # with temporaries
        chunk = int(max(1, min(budget_bytes // max(per_column, 1), x_real.size)))

        def by_columns(columns, i=i, x=x, x_real=x_real, steps=steps, chunk=chunk,
                       step_precision=step_precision):
            return _by_columns(evaluate, i, x, x_real, steps, columns, f0, chunk, step_precision)

        grouping = compressed.groups_of(pattern[i]) if pattern is not None else None
        if grouping is None:
            values, kinked, sides = by_columns(np.arange(x_real.size))
        else:
            values, kinked, sides, redo = compressed.fill(evaluate, i, x, x_real, steps[0], f0,
                                                   pattern[i], grouping, _RETRY_ESTIMATE,
                                                   step_precision)
            if redo.size:
                redone, kinks_redone, sides_redone = by_columns(redo)
                values[:, redo], kinked[:, redo] = redone, kinks_redone
                sides = _with_columns(sides, redo, sides_redone, values.shape)
            grouped[i] = np.setdiff1d(np.arange(x_real.size), redo)
        column_finders[i] = by_columns
        for k, rows in layout.output_rows(outputs):
            blocks[(k, i)], kinks[(k, i)] = values[rows], kinked[rows]
            if sides is not None:
                bounds[(k, i)] = sides[:, rows]

    def put_bounds(k, i, columns, new):
        made = _with_columns(bounds.get((k, i)), columns, new, blocks[(k, i)].shape)
        if made is not None:
            bounds[(k, i)] = made

    def redo_columns(i, columns):
        redone, kinks_redone, sides_redone = column_finders[i](columns)
        for k, rows in layout.output_rows(outputs):
            blocks[(k, i)][:, columns] = redone[rows]
            kinks[(k, i)][:, columns] = kinks_redone[rows]
            put_bounds(k, i, columns, None if sides_redone is None else sides_redone[:, rows])
        grouped[i] = np.setdiff1d(grouped[i], columns)

    reference = Reference(blocks, kinks, grouped, redo_columns, bounds=bounds)

    def sharpen_columns(i, columns):
        steps, step_precision = stepping[i]
        values, spread, kinked, sides = sharpened(evaluate, i, inputs[i],
                                                  layout.real_view(inputs[i]), steps, columns,
                                                  f0, step_precision)
        for k, rows in layout.output_rows(outputs):
            blocks[(k, i)][:, columns] = values[:, rows].T
            kinks[(k, i)][:, columns] = kinked[:, rows].T
            if kinked[:, rows].any():  # then sides is not None
                put_bounds(k, i, columns, sides[:, :, rows].transpose(0, 2, 1))
            uncertain = reference.uncertainty.setdefault((k, i), np.zeros_like(blocks[(k, i)]))
            uncertain[:, columns] = spread[:, rows].T
        grouped[i] = np.setdiff1d(grouped.get(i, []), columns)

    reference.sharpen = sharpen_columns
    return reference


def _with_columns(sides, columns, new, shape):
    """`sides` (2, *shape) with `new` written at `columns`, made on first need:
    None stands for a block with no kink yet, whose bounds nothing reads."""
    if new is None:
        return sides
    if sides is None:
        sides = np.empty((2,) + shape)
    sides[:, :, columns] = new
    return sides


def sharpened(evaluate, i, x, x_real, steps, columns, f0, precision):
    """(cols, out) values, their uncertainty and kinks, for columns where a
    gradient disagrees with the first differences.

    Each column is extrapolated again from steps h/2 and h/4, at whichever step
    scale agrees best with its extrapolation from h and h/2; twice the two
    estimates' distance bounds the error (it converges at first order at
    worst, and then the distance equals the error). On smooth functions it is
    tiny (both are O(h^4)); where the function is not twice differentiable (softsign at 0) or
    is only evaluated in float32, it is the real error, and the comparison
    allows for it rather than blaming the gradient. It is never taken below
    what rounding the outputs alone can do to the value (rounding_floor): in
    float32 the two estimates can agree exactly, both off by a rounding step.
    Below float64 the evaluations' own noise is measured too (_with_noise)."""
    columns = np.asarray(columns)
    chunk = len(columns)
    coarse_precision = finfo(precision).eps > finfo("float64").eps
    best, chosen = None, None
    for h in steps:
        coarse, _, _, _ = _at_scale(evaluate, i, x, x_real, h, columns, f0, chunk, precision)
        fine, _, kink, sides = _at_scale(evaluate, i, x, x_real, h / 2, columns, f0, chunk,
                                         precision)
        with np.errstate(invalid="ignore"):
            spread = 2.0 * np.abs(fine - coarse)
            spread = np.maximum(spread, rounding_floor(fine, f0, h[columns] / 2, precision))
        spread = np.where(np.isfinite(spread), spread, np.inf)
        if best is None:
            best, chosen = [fine, spread, kink, sides], h.copy()
            continue
        better = spread.max(axis=1) < best[1].max(axis=1)
        for n, candidate in enumerate((fine, spread, kink)):
            best[n][better] = candidate[better]
        chosen[columns[better]] = h[columns[better]]
        best[3] = _chosen_sides(best[3], better, True, None if sides is None else sides[:, better],
                                fine.shape)
    if coarse_precision:
        best[0], best[1] = _with_noise(evaluate, i, x, x_real, chosen / 2, columns, f0, precision,
                                       *best[:2])
        if best[3] is not None:
            # Noise can make an entry look like a kink; its mean value, as
            # uncertain as any other, is as good a bound as one step's sides.
            kinked, value = best[2], best[0]
            best[3][0][kinked] = np.fmin(best[3][0][kinked], value[kinked])
            best[3][1][kinked] = np.fmax(best[3][1][kinked], value[kinked])
    return tuple(best)


# Steps a few percent apart, as multiples of the sharpened step: their
# truncation errors are all but equal, so their Richardson values differ by the
# rounding noise of the evaluations alone. In float32 a long sum's noise is
# several units in the last place of its partial sums, not the half unit of
# the output that rounding_floor assumes (on an AVX2 CPU a correct float32 W x,
# 256 x 256 with entries about 10, failed 20 of its 65,536 entries). Not
# multiples of a power of 2: steps h and h/2 round alike, bit for bit, and
# their values agree while both are off.
_JITTERS = (1.07, 1.13, 1.19, 1.23, 1.29, 1.31, 1.37)
# Student's t for 7 degrees of freedom: the mean of 8 values is off by more
# than 13 of its standard errors about once in 270,000 (two-sided), and such an
# entry fails only if it is also off by more than its tolerance.
_NOISE_QUANTILE = 13.0


def _with_noise(evaluate, i, x, x_real, h, columns, f0, precision, value, spread):
    """(value, spread) from the mean of the Richardson values at h and at h
    times each of _JITTERS, and an uncertainty at least _NOISE_QUANTILE times
    the mean's standard error (a running mean and sum of squares: the values
    are as large as the columns of the Jacobian)."""
    mean, squares = value.copy(), np.zeros_like(value)
    order = np.random.default_rng(0)
    for n, jitter in enumerate(_JITTERS, start=2):
        # Each column at another place in the batch: batched kernels round
        # differently at different places (in float32, a matrix product's
        # place biased one column's difference by 3e-3 at every step).
        shuffle = order.permutation(len(columns))
        sample = np.empty_like(value)
        sample[shuffle], _, _, _ = _at_scale(evaluate, i, x, x_real, h * jitter, columns[shuffle],
                                             f0, len(columns), precision)
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


def _by_columns(evaluate, i, x, x_real, steps, columns, f0, chunk, precision):
    """(outputs, len(columns)) values and kinks, and the kinks' bounds or None,
    laid out like the Jacobian blocks (comparisons of mixed layouts are far
    slower), a chunk at a time."""
    values = np.empty((f0.size, len(columns)))
    kinks = np.empty((f0.size, len(columns)), dtype=bool)
    bounds = None  # (2, outputs, columns) once some entry is on a kink: see one_sided_bounds
    for start in range(0, len(columns), chunk):
        value, _, kink, sides = _columns(evaluate, i, x, x_real, steps, columns[start:start + chunk],
                                         f0, chunk, precision)
        here = slice(start, start + len(value))
        values[:, here] = value.T
        kinks[:, here] = kink.T
        if kink.any():
            bounds = _with_columns(bounds, here, sides.transpose(0, 2, 1), values.shape)
    return values, kinks, bounds


# An estimate above this (relative to max(|value|, 1)) sends the column to the
# second, smaller step scale.
_RETRY_ESTIMATE = 1e-5


def _columns(evaluate, i, x, x_real, steps, columns, f0, chunk, precision):
    """Richardson-extrapolated derivatives for some real components of input i,
    their error estimates, and where they sit on a kink.

    Every column is tried at the first step scale; only columns whose estimate
    is poor (near a pole or a domain edge) are tried again at the second."""
    value, error, kink, sides = _at_scale(evaluate, i, x, x_real, steps[0], columns, f0, chunk,
                                          precision)
    if steps.shape[0] == 1:
        return value, error, kink, sides
    poor = ~np.all(error <= _RETRY_ESTIMATE * np.maximum(np.abs(value), 1.0), axis=1)
    retry = poor & (steps[1][columns] != steps[0][columns])
    if retry.any():
        v2, e2, k2, s2 = _at_scale(evaluate, i, x, x_real, steps[1], columns[retry], f0, chunk,
                                   precision)
        better = e2 < error[retry]
        value[retry] = np.where(better, v2, value[retry])
        error[retry] = np.where(better, e2, error[retry])
        kink[retry] = np.where(better, k2, kink[retry])
        sides = _chosen_sides(sides, retry, better, s2, value.shape)
    return value, error, kink, sides


def one_column(outputs_at, x_real, c, steps, f0, precision):
    """Full mode's finite differences for real component c alone, one perturbed
    input at a time (`outputs_at(x_real)`: every output's real components), for
    fast mode's localisation: (value, estimate, kink, (low, high)) per output,
    low == high == value off the kinks."""
    value, estimate, kink, bounds = _one_column_at(outputs_at, x_real, c, steps[0][c], f0, precision)
    poor = ~np.all(estimate <= _RETRY_ESTIMATE * np.maximum(np.abs(value), 1.0))
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


def _chosen_sides(sides, rows, better, new, shape):
    """`sides` with `new` where `better` at `rows`; either may be None (no kink)."""
    if new is None:
        return sides
    if sides is None:
        sides = np.empty((2,) + shape)
    sides[:, rows] = np.where(better, new, sides[:, rows])
    return sides


def _at_scale(evaluate, i, x, x_real, h, columns, f0, chunk, precision):
    """(cols, out) derivatives, estimates and kinks, with steps h[column].

    The columns are padded to `chunk` (repeating the first), so that every call
    has the same shape and the vectorised function is traced once."""
    wanted = len(columns)
    columns = np.concatenate([columns, np.repeat(columns[:1], chunk - wanted)])
    n_cols = len(columns)
    batch_real = np.broadcast_to(x_real, (len(OFFSETS), n_cols, x_real.size)).copy()
    col_axis = np.arange(n_cols)
    batch_real[:, col_axis, columns] += (h[columns][None] * OFFSETS[:, None]).astype(x_real.dtype)
    # The step actually taken, after rounding x + h to the input's precision.
    taken = batch_real[:, col_axis, columns].astype(np.float64) - x_real[columns].astype(np.float64)
    batch = layout.from_real_view(batch_real.reshape(-1, x_real.size), x.dtype, x.shape)
    del batch_real
    results = [layout.real_view_batch(r).astype(np.float64, copy=False) for r in evaluate(i, batch)]
    y = results[0] if len(results) == 1 else np.concatenate(results, axis=1)
    y = y.reshape(len(OFFSETS), n_cols, -1)
    value, estimate = np.empty((wanted, f0.size)), np.empty((wanted, f0.size))
    kink = np.empty((wanted, f0.size), dtype=bool)
    sides = None  # (2, cols, out) once an entry is on a kink; read only there
    # A few columns at a time, so that the temporaries stay in the cache:
    # twice as fast as the whole chunk at once for large outputs.
    block = max(1, _BLOCK_ENTRIES // max(f0.size, 1))
    for start in range(0, wanted, block):
        piece = slice(start, min(start + block, wanted))
        value[piece], estimate[piece], kink[piece] = _richardson(y[:, piece], taken[:, piece],
                                                                   f0, precision)
        if kink[piece].any():
            sides = np.empty((2, wanted, f0.size)) if sides is None else sides
            sides[:, piece][:, kink[piece]] = one_sided_bounds(y[:, piece], taken[:, piece], f0,
                                                               kink[piece])
    return value, estimate, kink, sides


_BLOCK_ENTRIES = 1 << 15


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
