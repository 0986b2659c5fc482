"""Finite differences: the reference Jacobian every gradient is judged against.

Central differences at two steps h and h/2, combined by Richardson
extrapolation (error O(h^4)); |D(h/2) - D(h)| estimates the error. Each element
is tried at two step scales, one relative to max(|x|, 1) and one relative to
|x| itself (for inputs near a pole or a domain edge at zero), and keeps the
scale whose estimate is smaller. All perturbed inputs of a chunk of columns are
evaluated in one vectorised call (differences.py).
"""
import numpy as np

from gradcheck import progress
from gradcheck.numerics import compressed, layout
from gradcheck.numerics.differences import RETRY_ESTIMATE, InputDifferences, with_columns
from gradcheck.numerics.dtypes import coarsest
from gradcheck.numerics.richardson import OFFSETS, step_scales


class Reference:
    """blocks[(k, i)]: d(output k) / d(input i) by finite differences, in real
    components; kinks[(k, i)]: entries where the one-sided differences disagree
    (a kink or a step: finite differences mean nothing there)."""

    def __init__(self, differencing, outputs):
        self.blocks, self.kinks = {}, {}
        # {input: columns whose values came from compressed (grouped) differences}
        self.compressed = {}
        # {(k, i): (out, n) array}: how far the sharpened entries may still be off
        self.uncertainty = {}
        # {(k, i): (2, out, n) array}: on kink entries, the least and greatest of
        # the one-sided differences and their extrapolations (see one_sided_bounds)
        self.bounds = {}
        self._differencing, self._outputs = differencing, outputs

    def put(self, i, values, kinked, sides):
        for k, rows in layout.output_rows(self._outputs):
            self.blocks[(k, i)], self.kinks[(k, i)] = values[rows], kinked[rows]
            if sides is not None:
                self.bounds[(k, i)] = sides[:, rows]

    def refine(self, i, columns):
        """Replace compressed columns of input i by individual differences: where a
        gradient disagrees, the pattern that grouped them may be what is wrong."""
        columns = np.intersect1d(columns, self.compressed.get(i, []))
        if not columns.size:
            return 0
        progress.expect(progress.COLUMNS, columns.size)
        redone, kinks_redone, sides_redone = self._differencing[i].by_columns(columns)
        for k, rows in layout.output_rows(self._outputs):
            self.blocks[(k, i)][:, columns] = redone[rows]
            self.kinks[(k, i)][:, columns] = kinks_redone[rows]
            self._put_bounds(k, i, columns, None if sides_redone is None else sides_redone[:, rows])
        self.compressed[i] = np.setdiff1d(self.compressed[i], columns)
        return columns.size

    def sharpen(self, i, columns):
        """Difference those columns again at smaller steps (see sharpened())."""
        values, spread, kinked, sides = self._differencing[i].sharpened(columns)
        for k, rows in layout.output_rows(self._outputs):
            self.blocks[(k, i)][:, columns] = values[:, rows].T
            self.kinks[(k, i)][:, columns] = kinked[:, rows].T
            if kinked[:, rows].any():  # then sides is not None
                self._put_bounds(k, i, columns, sides[:, :, rows].transpose(0, 2, 1))
            uncertain = self.uncertainty.setdefault((k, i), np.zeros_like(self.blocks[(k, i)]))
            uncertain[:, columns] = spread[:, rows].T
        self.compressed[i] = np.setdiff1d(self.compressed.get(i, []), columns)

    def _put_bounds(self, k, i, columns, new):
        made = with_columns(self.bounds.get((k, i)), columns, new, self.blocks[(k, i)].shape)
        if made is not None:
            self.bounds[(k, i)] = made


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
    out_size = sum(spec.real_size for spec in outputs)
    differencing = {}
    reference = Reference(differencing, outputs)
    for i in wrt:
        x = inputs[i]
        x_real = layout.real_view(x)
        # A function that computes in float32 whatever it is given (its outputs
        # say so) needs steps for float32, or rounding swamps the differences.
        step_precision = coarsest(x.dtype, precision or x.dtype, *(b.dtype for b in base))
        steps = step_scales(x_real, step_precision, eps)
        per_column = len(OFFSETS) * (x_real.size + out_size) * 8 * 4  # with temporaries
        chunk = int(max(1, min(budget_bytes // max(per_column, 1), x_real.size)))
        differencing[i] = InputDifferences(evaluate, i, x, steps, step_precision, chunk, f0)
        progress.expect(progress.COLUMNS, x_real.size)
        grouping = compressed.groups_of(pattern[i]) if pattern is not None else None
        if grouping is None:
            values, kinked, sides = differencing[i].by_columns(np.arange(x_real.size))
        else:
            values, kinked, sides, redo = compressed.fill(evaluate, i, x, x_real, steps[0], f0,
                                                   pattern[i], grouping, RETRY_ESTIMATE,
                                                   step_precision)
            progress.advance(progress.COLUMNS, x_real.size - redo.size)
            if redo.size:
                redone, kinks_redone, sides_redone = differencing[i].by_columns(redo)
                values[:, redo], kinked[:, redo] = redone, kinks_redone
                sides = with_columns(sides, redo, sides_redone, values.shape)
            reference.compressed[i] = np.setdiff1d(np.arange(x_real.size), redo)
        reference.put(i, values, kinked, sides)
    return reference
