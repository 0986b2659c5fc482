"""Fast mode: random projections u^T J v, and localisation by bisection.

For each differentiable input, a few random vectors u (over the outputs) and v
(over the input) give u^T J v twice: from TensorFlow's gradient (one VJP with
cotangent u, dotted with v) and from finite differences of t -> u . f(x + t v)
in the reference precision, computed inside TensorFlow: central differences,
then Richardson extrapolation for a projection that disagrees with them before
it is called wrong. When a projection disagrees, the input
elements are bisected (finite differences along v restricted to each half) and
then the outputs (VJPs with u restricted to each half), naming one guilty
Jacobian entry in O(log n + log m) further evaluations.
"""
import dataclasses

import numpy as np

from gradcheck import layout
from gradcheck.numeric import base_step, finfo

PROJECTIONS = 2
# Projection tolerances are a multiple of the spread that correct gradients show:
# rounding errors add up like a random walk over the entries.
_SAFETY = 4.0


@dataclasses.dataclass
class Projection:
    u: np.ndarray  # real components of all differentiable outputs
    v: np.ndarray  # real components of one input


@dataclasses.dataclass
class Finding:
    """One projection's verdict for one input, and where localisation led."""

    analytic: float
    numeric: float
    allowed: float
    row: int = None  # a guilty Jacobian entry (row over all outputs, column of the input)
    column: int = None
    entry_analytic: float = float("nan")
    entry_numeric: float = float("nan")

    @property
    def ok(self):
        return abs(self.analytic - self.numeric) <= self.allowed


def draw_cotangents(out_size, rng, count=PROJECTIONS):
    """The u vectors, shared by every input so that one batch of VJPs serves all.
    Never all ones: a gradient that ignores its upstream gradient must not pass
    a scalar output."""
    return [_random_weights(out_size, rng) for _ in range(count)]


def draw_projections(us, in_size, rng):
    """One v per u. Not signs alone: a gradient with two entries of a row
    swapped is wrong by (a, -a), which a v with equal signs there cancels."""
    return [Projection(u, _random_weights(in_size, rng)) for u in us]


def _random_weights(size, rng):
    """Random signs times magnitudes uniform in [0.5, 1.5], from one draw."""
    s = rng.uniform(-1.0, 1.0, size=size)
    s += np.copysign(0.5, s)
    return s


class Directional:
    """Finite differences of t -> u . f(x + t d) for input i, many directions at once."""

    def __init__(self, evaluate, i, x, f0_real, specs):
        self.evaluate, self.i, self.x, self.specs = evaluate, i, x, specs
        self.x_real = layout.real_view(x)
        self.f0 = f0_real
        self.scale = max(float(np.abs(self.x_real).max(initial=0.0)), 1.0)
        self.h = base_step(x.dtype) * self.scale

    # Steps along d: x + o h d. Rounding x + o h d to the input's precision moves
    # each element by at most eps |x|, which the error estimates account for.
    OFFSETS = np.array([1.0, -1.0, 0.5, -0.5])
    CENTRAL = np.array([1.0, -1.0])

    def outputs(self, directions, steps):
        """(directions, steps, outputs): f at x + t d for each step t, evaluated
        in calls of at most BUDGET_BYTES of perturbed inputs (at least one)."""
        pairs = [(d, t) for d in range(len(directions)) for t in steps]
        per_call = max(1, self.BUDGET_BYTES // (8 * max(self.x_real.size, 1)))
        parts = [self._evaluate([self.x_real + t * np.asarray(directions[d])
                                 for d, t in pairs[start:start + per_call]])
                 for start in range(0, len(pairs), per_call)]
        return np.concatenate(parts).reshape(len(directions), len(steps), -1)

    BUDGET_BYTES = 64 << 20

    def _evaluate(self, perturbed):
        real = np.stack(perturbed).astype(self.x_real.dtype, copy=False)
        batch = layout.from_real_view(real, self.x.dtype, self.x.shape)
        results = self.evaluate(self.i, batch)
        return np.concatenate([layout.real_view_batch(r).astype(np.float64) for r in results], axis=1)

    def central(self, directions, us):
        """(values, rounding error estimates) of u^T J d for each direction d and
        its u, from central differences at a step of eps^(1/3): 2 evaluations, a
        truncation error near eps^(2/3), far inside the tolerances. Where they
        disagree with a gradient, `derivatives` decides."""
        h = float(finfo(self.x.dtype).eps) ** (1 / 3) * self.scale
        phi = self._projections(directions, us, h * self.CENTRAL)
        values = (phi[:, 0] - phi[:, 1]) / (2 * h)
        return np.where(np.isfinite(values), values, np.nan), self._rounding(phi, us, h)

    def _rounding(self, phi, us, h):
        eps = float(finfo(self.x.dtype).eps)
        f0_u = np.abs([float(self.f0 @ u) for u in us])
        return eps * (np.abs(phi).max(axis=1) + f0_u) / h

    def derivatives(self, directions, us):
        """(values, error estimates) of u^T J d for each direction d and its u,
        Richardson-extrapolated from steps h and h/2."""
        phi = self._projections(directions, us, self.h * self.OFFSETS)
        t = self.h * self.OFFSETS
        d_full = (phi[:, 0] - phi[:, 1]) / (t[0] - t[1])
        d_half = (phi[:, 2] - phi[:, 3]) / (t[2] - t[3])
        values = d_half + (d_half - d_full) / 3.0
        return (np.where(np.isfinite(values), values, np.nan),
                np.abs(d_half - d_full) + self._rounding(phi, us, abs(t[2])))

    def _projections(self, directions, us, steps):
        """(directions, steps): u . f(x + t d), inside TensorFlow when the
        function is vectorised there, in calls within BUDGET_BYTES."""
        per_call = max(1, self.BUDGET_BYTES // (8 * len(steps) * max(self.x_real.size, 1)))
        parts = []
        for start in range(0, len(directions), per_call):
            chunk = slice(start, start + per_call)
            parts.append(self._projected(directions[chunk], us[chunk], steps))
        return np.concatenate(parts)

    def _projected(self, directions, us, steps):
        projected = getattr(self.evaluate, "projected", None)
        if projected is not None:
            laid_out = layout.from_real_view(np.stack(directions).astype(self.x_real.dtype),
                                             self.x.dtype, self.x.shape)
            phi = projected(self.i, laid_out, steps,
                            [np.stack(part) for part in zip(*(self._per_output(u) for u in us))])
            if phi is not None:
                return phi
        return np.stack([y @ u for y, u in zip(self.outputs(directions, steps), us)])

    def _per_output(self, u):
        """u (real components of all outputs) as one float64 or complex128 array per output."""
        parts, offset = [], 0
        for spec in self.specs:
            real = u[offset:offset + spec.real_size]
            dtype = np.complex128 if spec.is_complex else np.float64
            parts.append(layout.from_real_view(real[None], dtype, spec.shape)[0])
            offset += spec.real_size
        return parts

    def columns(self, direction):
        """The whole Jacobian column J d (one direction), by finite differences."""
        y = self.outputs([direction], self.h * self.OFFSETS)[0]
        t = self.h * self.OFFSETS
        d_full = (y[0] - y[1]) / (t[0] - t[1])
        d_half = (y[2] - y[3]) / (t[2] - t[3])
        return d_half + (d_half - d_full) / 3.0


class Plan:
    """One input's projections and their finite differences: central
    differences first, Richardson extrapolation (computed once, for all of
    them) where a gradient disagrees with those."""

    def __init__(self, directional, projections):
        self.directional, self.projections = directional, projections
        self.central = list(zip(*directional.central(*self._vectors())))
        self._richardson = None

    def _vectors(self):
        return [p.v for p in self.projections], [p.u for p in self.projections]

    def richardson(self, k):
        if self._richardson is None:
            self._richardson = list(zip(*self.directional.derivatives(*self._vectors())))
        return self._richardson[k]


def allowed_error(gradient_part, direction, u, atol, rtol, fd_error):
    """How far u^T J d may be off for a right gradient: per-entry tolerances
    adding up like a random walk, plus the finite differences' own error.
    Non-finite gradient entries get no tolerance: they are wrong whatever it is."""
    g = np.where(np.isfinite(gradient_part), np.abs(gradient_part), 0.0)
    return _SAFETY * (rtol * float(np.linalg.norm(g * np.abs(direction)))
                      + atol * float(np.sqrt(np.count_nonzero(direction) + np.count_nonzero(u)))
                      + fd_error)


def localise(finding, directional, gradient, projection, vjp_column, atol, rtol):
    """Bisect a failing projection down to one Jacobian entry (row, column)."""
    u, v = projection.u, projection.v
    support = np.flatnonzero(v)
    while len(support) > 1:
        halves = np.array_split(support, 2)
        directions = [np.where(np.isin(np.arange(v.size), h), v, 0.0) for h in halves]
        numeric, errors = directional.derivatives(directions, [u] * len(directions))
        # Each half from its own entries only: a NaN elsewhere in the gradient
        # would make every half's value NaN (NaN * 0).
        excess = [abs(float(gradient[h] @ v[h]) - n)
                  - allowed_error(gradient[h], v[h], u, atol, rtol, e)
                  for h, n, e in zip(halves, numeric, errors)]
        support = halves[_most_wrong(excess)]
    column = int(support[0])
    basis = np.zeros(v.size)
    basis[column] = 1.0
    numeric_column = directional.columns(basis)
    rows = np.flatnonzero(u)
    while len(rows) > 1:
        halves = np.array_split(rows, 2)
        masks = [np.where(np.isin(np.arange(u.size), h), u, 0.0) for h in halves]
        analytic = vjp_column(masks, column)
        excess = [abs(a - float(m @ numeric_column)) for a, m in zip(analytic, masks)]
        # TensorFlow's VJP keeps a NaN of the gradient where the cotangent is 0
        # (0 * NaN), so both halves can be NaN: then take the outputs that the
        # finite differences say depend on this input element.
        depends = [float(np.abs(numeric_column[h]).sum()) for h in halves]
        rows = halves[_most_wrong(excess, depends)]
    row = int(rows[0])
    unit = np.zeros(u.size)
    unit[row] = 1.0
    finding.row, finding.column = row, column
    finding.entry_analytic = float(vjp_column([unit, unit], column)[0])
    finding.entry_numeric = float(numeric_column[row])
    return finding


def _most_wrong(excess, tie_break=(0.0, 0.0)):
    """The index of the largest excess, a NaN one (a non-finite gradient or finite
    difference) counting as infinite; ties go to the larger `tie_break`."""
    keys = [(np.inf if np.isnan(e) else e, np.inf if np.isnan(t) else t)
            for e, t in zip(excess, tie_break)]
    return max(range(len(keys)), key=keys.__getitem__)
