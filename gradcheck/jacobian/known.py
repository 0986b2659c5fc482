"""A mode's Jacobian from a few VJPs, once another mode's is known.

Rows whose nonzero columns never meet share one randomly weighted cotangent,
and each entry of the known pattern reads its value back; rows that cannot be
grouped are compared through random projections instead. Either is used only
when the mode agrees closely with the known Jacobian; otherwise it is built in
full. Why this cannot let a wrong gradient through, with the odds, is in
docs/verdict.md ("Later modes from the first mode's Jacobian").
"""
import functools

import numpy as np

from gradcheck.errors import CheckSetupError
from gradcheck.jacobian import analytic
from gradcheck.numerics import compressed, dtypes, layout

# Coarser tolerances would let two swapped rows pass on a ratio of weights.
COARSEST_RTOL = 1e-3
# Random cotangents for a Jacobian whose rows cannot be grouped, and how far
# their VJPs may stray from the known Jacobian's, as a share of the smallest
# tolerance in each column.
DENSE_PROJECTIONS = 4
SPARSE_PROJECTIONS = 4
ONE_HOT_PROJECTIONS = 2
PROJECTED_SHARE = 0.25
# A Jacobian with no more rows than that many VJPs is cheaper to build in full.
FEWEST_ROWS = DENSE_PROJECTIONS + SPARSE_PROJECTIONS + ONE_HOT_PROJECTIONS + 1


class KnownJacobian:
    """One mode's Jacobian blocks[(k, i)], and (worked out when first used) the
    groups of its rows that share no column of any input in `wrt`, or else
    its projections on random cotangents."""

    def __init__(self, blocks, inputs, wrt, outputs, rng):
        self.blocks, self.inputs, self.wrt, self.outputs = blocks, inputs, wrt, outputs
        # A stream of its own, drawn whether or not it is used, so that the
        # check's later random numbers do not depend on whether rows were grouped.
        self.rng = np.random.default_rng(rng.integers(1 << 62))
        self.made = []  # the blocks this made, whose nonzeros are all on the known pattern
        self._allowances = {}  # per input and tolerances: see _projected_allowance
        self.offsets = np.cumsum([0] + [spec.real_size for spec in outputs])

    def jacobian(self, run, tolerance):
        """blocks[(k, i)] of `run`'s mode from one VJP per group (or, for rows
        that cannot be grouped, a copy of the known blocks), or None if the
        mode's Jacobian does not match the known one. `tolerance(k, i)` gives
        the modes' (atol, rtol) for that block."""
        if self._coarse(tolerance) or self.offsets[-1] < FEWEST_ROWS:
            return None
        if self._plan is None:
            return self._projected(run, tolerance)
        grads = _vjps_or_none(run, self._plan.cotangents)
        if grads is None:
            return None
        blocks = {}
        for position, i in enumerate(self.wrt):
            analytic.check_gradient_shape(grads[position], self.inputs[i], len(self._plan.groups))
            sums = layout.real_view_batch(grads[position]).astype(np.float64)
            values = self._plan.read(position, sums, self._tolerances(i, tolerance))
            if values is None:
                return None
            blocks.update(self._split(i, position, values))
        self.made.append(blocks)
        return blocks

    def _projected(self, run, tolerance):
        """A copy of the known blocks if `run`'s projections match theirs, else None."""
        if not self._finite or self.offsets[-1] == 0:
            return None
        allowances = [self._projected_allowance(i, tolerance) for i in self.wrt]
        if any(allowed is None for allowed in allowances):
            return None
        weights, cotangents = self._projection_cotangents()
        grads = _vjps_or_none(run, cotangents)
        if grads is None:
            return None
        for position, (i, allowed) in enumerate(zip(self.wrt, allowances)):
            analytic.check_gradient_shape(grads[position], self.inputs[i], len(weights))
            sums = layout.real_view_batch(grads[position]).astype(np.float64)
            expected = sum(weights[:, self.offsets[k]:self.offsets[k + 1]] @ self.blocks[(k, i)]
                           for k in range(len(self.outputs)))
            if not (np.isfinite(sums).all() and np.all(np.abs(sums - expected) <= allowed)):
                return None
        blocks = dict(self.blocks)  # a dict of its own: jacobians_in_full tells them apart
        self.made.append(blocks)
        return blocks

    @functools.cached_property
    def _finite(self):
        return all(np.isfinite(b).all() for b in self.blocks.values())

    def _projection_cotangents(self):
        """(weights as the outputs' dtypes hold them, which is what the VJPs see:
        (projections, rows); one cotangent per output)."""
        rows = self.offsets[-1]
        drawn = np.concatenate([_random_weights(self.rng, (DENSE_PROJECTIONS, rows)),
                                _sparse_weights(self.rng, (SPARSE_PROJECTIONS, rows)),
                                _one_hot_weights(self.rng, ONE_HOT_PROJECTIONS, rows)])
        cotangents, weights = [], np.empty_like(drawn)
        for k, spec in enumerate(self.outputs):
            rows = slice(self.offsets[k], self.offsets[k + 1])
            real = drawn[:, rows].astype(layout.real_numpy_dtype(dtypes.numpy_dtype(spec.dtype)))
            weights[:, rows] = real
            cotangents.append(layout.from_real_view(real, dtypes.numpy_dtype(spec.dtype), spec.shape))
        return weights, cotangents

    def _projected_allowance(self, i, tolerance):
        """PROJECTED_SHARE of the smallest atol + rtol * |entry| in each column of
        input i; None if the VJPs' own rounding (eps * sqrt(rows) * |column|)
        would likely exceed it: such a mode would be refused anyway, after
        paying for its VJPs."""
        pairs = tuple(tolerance(k, i) for k in range(len(self.outputs)))
        key = (i, pairs)
        if key not in self._allowances:
            smallest = np.full(self.inputs[i].real_size, np.inf)
            rounding = np.zeros(self.inputs[i].real_size)
            for k, (atol, rtol) in enumerate(pairs):
                block = np.abs(self.blocks[(k, i)])
                rounding += self._eps(k, i) * np.sqrt(block.shape[0]) * np.linalg.norm(block, axis=0)
                block *= rtol
                np.minimum(smallest, block.min(axis=0, initial=np.inf) + atol, out=smallest)
            allowed = PROJECTED_SHARE * smallest
            self._allowances[key] = allowed if np.all(rounding <= allowed) else None
        return self._allowances[key]

    def _eps(self, k, i):
        """The rounding unit of the VJP from output k to input i: the coarser dtype's."""
        return max(float(np.finfo(layout.real_numpy_dtype(dtypes.numpy_dtype(dtype))).eps)
                   for dtype in (self.outputs[k].dtype, self.inputs[i].dtype))

    @functools.cached_property
    def _plan(self):
        blocks = list(self.blocks.values())
        nonzero = sum(np.count_nonzero(b) for b in blocks)
        if nonzero * compressed.MIN_SAVING > sum(b.size for b in blocks):
            return None  # too dense to group (counted without making the masks)
        masks = [np.concatenate([self.blocks[(k, i)] != 0 for k in range(len(self.outputs))])
                 for i in self.wrt]
        if not masks or masks[0].shape[0] == 0:
            return None
        joint = compressed.Sparsity(masks[0] if len(masks) == 1 else np.concatenate(masks, axis=1))
        groups = compressed.row_groups(joint)
        # The first mode's Jacobian may have come from columns (analytic.columns_pay):
        # the groups must be few next to those too.
        if groups is None or len(groups) * compressed.MIN_SAVING > joint.shape[1]:
            return None
        known = self._known_entries(joint.entries, [mask.shape[1] for mask in masks])
        if not all(np.isfinite(values).all() for _, _, values in known):
            return None  # non-finite entries are compared in full, NaN against NaN
        return _GroupPlan(groups, known, self.outputs, self.offsets, self.rng)

    def _known_entries(self, entries, widths):
        """(rows, columns, values) of the nonzero entries, per input."""
        rows, joint_columns = entries
        known, start = [], 0
        for i, width in zip(self.wrt, widths):
            mine = (joint_columns >= start) & (joint_columns < start + width)
            rows_i, columns = rows[mine], joint_columns[mine] - start
            start += width
            values = np.empty(rows_i.size)
            for k in range(len(self.outputs)):
                inside = (rows_i >= self.offsets[k]) & (rows_i < self.offsets[k + 1])
                values[inside] = self.blocks[(k, i)][rows_i[inside] - self.offsets[k], columns[inside]]
            known.append((rows_i, columns, values))
        return known

    def _coarse(self, tolerance):
        return any(tolerance(k, i)[1] > COARSEST_RTOL for i in self.wrt
                   for k in range(len(self.outputs)))

    def _tolerances(self, i, tolerance):
        """(atol, rtol) per row of the Jacobian, from its output's block."""
        pairs = np.array([tolerance(k, i) for k in range(len(self.outputs))])
        sizes = np.diff(self.offsets)
        return np.repeat(pairs[:, 0], sizes), np.repeat(pairs[:, 1], sizes)

    def _split(self, i, position, values):
        rows, columns, _ = self._plan.known[position]
        whole = np.zeros((self.offsets[-1], self.inputs[i].real_size))
        whole[rows, columns] = values
        return {(k, i): whole[self.offsets[k]:self.offsets[k + 1]] for k in range(len(self.outputs))}


class _GroupPlan:
    """The groups, one cotangent per output with a row of weights per group,
    and the known Jacobian's entries: (rows, columns, values) per input."""

    def __init__(self, groups, known, outputs, offsets, rng):
        self.groups, self.known = groups, known
        self.group_of = np.empty(offsets[-1], dtype=np.int64)
        for g, rows in enumerate(groups):
            self.group_of[rows] = g
        drawn = _random_weights(rng, offsets[-1])
        self.cotangents, self.weights = [], np.empty(offsets[-1])
        for k, spec in enumerate(outputs):
            rows = np.arange(offsets[k], offsets[k + 1])
            real_dtype = layout.real_numpy_dtype(dtypes.numpy_dtype(spec.dtype))
            real = np.zeros((len(groups), spec.real_size), dtype=real_dtype)
            real[self.group_of[rows], rows - offsets[k]] = drawn[rows]
            # The weights as the output's dtype holds them, which is what the VJP sees.
            self.weights[rows] = real[self.group_of[rows], rows - offsets[k]]
            self.cotangents.append(layout.from_real_view(real, dtypes.numpy_dtype(spec.dtype), spec.shape))

    def read(self, position, sums, tolerances):
        """The entries on the pattern from the groups' VJP `sums` (groups, columns),
        or None if the sums do not match the known Jacobian."""
        rows, columns, known = self.known[position]
        atol, rtol = tolerances
        if not np.isfinite(sums).all():
            return None
        groups = self.group_of[rows]
        values = sums[groups, columns] / self.weights[rows]
        allowed = 0.5 * np.minimum(atol[rows], rtol[rows] * np.abs(known))
        if not np.all(np.abs(values - known) <= allowed):
            return None
        off_pattern = sums.copy()
        off_pattern[groups, columns] = 0.0
        if not np.all(np.abs(off_pattern) <= atol.min()):
            return None
        return values


def _random_weights(rng, shape):
    """Magnitudes between 1 and 2, random signs."""
    return rng.uniform(1.0, 2.0, shape) * rng.choice([-1.0, 1.0], shape)


def _sparse_weights(rng, shape):
    """A quarter of them 0, the others between 1/4 and 4 in magnitude (evenly
    in log scale), random signs."""
    kept = rng.uniform(size=shape) >= 0.25
    return kept * np.exp2(rng.uniform(-2.0, 2.0, shape)) * rng.choice([-1.0, 1.0], shape)


def _one_hot_weights(rng, count, rows):
    """`count` cotangents as the full build makes them: one row each, at one of its scales."""
    weights = np.zeros((count, rows))
    weights[np.arange(count), rng.integers(rows, size=count)] = analytic.row_scales(count, rng)
    return weights


def _vjps_or_none(run, cotangents):
    """The VJPs of a few rows, or None if they fail: the Jacobian in full then
    raises the real error, if any."""
    try:
        return _vjps_one_row_at_a_time(run, cotangents)
    except CheckSetupError:
        raise
    except Exception:  # noqa: BLE001  (any gradient failure: the full build reports it)
        run.discard_failed_gradient()
        return None


def _vjps_one_row_at_a_time(run, cotangents):
    """A few rows: one VJP each (truly eager in eager mode), with no batch to trace."""
    vectorized = run.row_by_row
    run.row_by_row = True
    try:
        return run.vjp(cotangents)
    finally:
        run.row_by_row = vectorized

