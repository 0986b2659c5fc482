"""Fast mode: random projections u^T J v, and localisation by bisection.

For each differentiable input, a few random vectors u (over the outputs) and v
(over the input) give u^T J v twice: from TensorFlow's gradient (one VJP with
cotangent u, dotted with v) and from finite differences of t -> u . f(x + t v)
in the reference precision: the cheapest that resolves the gradient's
tolerance, then Richardson extrapolation for a projection that disagrees with
it, before that projection is called wrong. When a projection disagrees, the
input elements are bisected (finite differences along v restricted to each
half) and then the outputs (VJPs with u restricted to each half), naming one
guilty Jacobian entry in O(log n + log m) further evaluations (localise.py).
"""
import dataclasses

import numpy as np

from gradcheck.numerics import layout
from gradcheck.numerics.compare import outside_interval
from gradcheck.numerics.differences import one_column
from gradcheck.numerics.dtypes import finfo
from gradcheck.numerics.richardson import base_step, extrapolated, step_scales
from gradcheck.numerics.weights import signed_weights

PROJECTIONS = 2
# Where the whole Jacobian is small, more projections cost little and make a
# miss (every projection cancelling the error) far less likely (docs/fast-mode.md).
SMALL_JACOBIAN_PROJECTIONS = 8
SMALL_JACOBIAN = 1 << 12
# Projection tolerances are a multiple of the spread that correct gradients show:
# rounding errors add up like a random walk over the entries.
_SAFETY = 4.0


def projection_count(rows, columns):
    """How many projections a check of a rows x columns Jacobian draws."""
    return SMALL_JACOBIAN_PROJECTIONS if rows * columns <= SMALL_JACOBIAN else PROJECTIONS


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
    bounds: tuple = None  # (least, greatest) the numeric side may be: a column on a kink
    row: int = None  # a guilty Jacobian entry (row over all outputs, column of the input)
    column: int = None
    entry_analytic: float = float("nan")
    entry_numeric: float = float("nan")
    entry_bounds: tuple = None  # the entry's one-sided differences, if on a kink
    unresolved: str = ""  # why it was left failing, if localisation gave up

    @property
    def error(self):
        """How far the gradient is from finite differences (outside the bounds, on a kink)."""
        if self.bounds is None:
            return abs(self.analytic - self.numeric)
        return float(outside_interval(self.analytic, *self.bounds))

    @property
    def ok(self):
        return self.error <= self.allowed


@dataclasses.dataclass
class NumericColumn:
    """Finite differences of every output with respect to one input component,
    kept at the rows where they are not zero. On a kink or step, a row holds
    the range of its one-sided differences (richardson.one_sided_bounds), elsewhere
    low == high, Richardson's value."""

    rows: np.ndarray
    value: np.ndarray
    low: np.ndarray
    high: np.ndarray
    spread: np.ndarray  # Richardson's error estimate per row
    kinked: np.ndarray  # bool per row: on a kink or step

    @property
    def on_kink(self):
        return bool(self.kinked.any())

    @property
    def kinked_rows(self):
        return self.rows[self.kinked]

    def interval(self, weights):
        """(least, greatest) weights . column, each kinked row anywhere in its range."""
        w = weights[self.rows]
        with np.errstate(invalid="ignore"):
            a, b = w * self.low, w * self.high
            return float(np.fmin(a, b).sum()), float(np.fmax(a, b).sum())

    def error(self, weights):
        return float(np.abs(weights[self.rows]) @ self.spread)

    def dependence(self, rows):
        """How much the outputs `rows` depend on this component, by finite differences."""
        return float(np.abs(self.value[np.isin(self.rows, rows)]).sum())

    def entry(self, row):
        """(Richardson's value, (low, high) if the entry is on a kink, else None)."""
        at = np.flatnonzero(self.rows == row)
        if not at.size:
            return 0.0, None
        k = at[0]
        bounds = (float(self.low[k]), float(self.high[k])) if self.kinked[k] else None
        return float(self.value[k]), bounds


def draw_cotangents(out_size, rng, count):
    """The u vectors, shared by every input so that one batch of VJPs serves all.
    Never all ones: a gradient that ignores its upstream gradient must not pass
    a scalar output. Kept in float32, where they are exact, to halve their
    memory; every product with them is taken in float64."""
    return [signed_weights(rng, out_size, np.float32) for _ in range(count)]


def draw_projections(us, in_size, rng):
    """One v per u. Not signs alone: a gradient with two entries of a row
    swapped is wrong by (a, -a), which a v with equal signs there cancels."""
    return [Projection(u, signed_weights(rng, in_size, np.float32)) for u in us]


class Directional:
    """Finite differences of t -> u . f(x + t d) for input i, one direction d
    (and its u) at a time."""

    def __init__(self, evaluate, i, x, f0_real, precision):
        """`precision`: the dtype the function computes in, for the steps and
        the rounding estimates (float32 for a float64 input cast inside)."""
        self.evaluate, self.i, self.x = evaluate, i, x
        self.x_real = layout.real_view(x)
        self.f0 = f0_real
        self.precision = precision
        self.eps = float(finfo(precision).eps)
        self.scale = max(float(np.abs(self.x_real).max(initial=0.0)), 1.0)
        self.h = base_step(precision) * self.scale
        self._steps = None  # full mode's steps per component, for `column`

    # Steps along d: x + o h d. Rounding x + o h d to the input's precision moves
    # each element by at most eps |x|, which the error estimates account for.
    OFFSETS = np.array([1.0, -1.0, 0.5, -0.5])

    # The cheap finite differences, cheapest first: (step as a power of eps, steps).
    CHEAP = ((1 / 2, (1.0,)), (1 / 3, (1.0, -1.0)))

    def cheapest(self, direction, u, resolution):
        """(value, rounding error estimate) of u^T J d by the cheapest finite
        difference whose rounding error is within `resolution`: one-sided from
        f(x) at a step of sqrt(eps) (1 evaluation), else central at eps^(1/3)
        (2); None if neither is (then only `derivative` will do). Their
        truncation errors, near sqrt(eps) and eps^(2/3), are not estimated: a
        gradient that disagrees goes to `derivative` before it is called wrong."""
        kind = self.cheap_kind(u, resolution)
        return None if kind is None else self.cheap(direction, u, kind)

    def cheap_kind(self, u, resolution):
        """Which of CHEAP resolves `resolution` (the rounding error depends on u
        alone, not on the direction), or None."""
        for kind, (power, _) in enumerate(self.CHEAP):
            if self._rounding(u, self.eps ** power * self.scale) <= resolution:
                return kind
        return None

    def cheap(self, direction, u, kind):
        """(value, rounding error estimate) of u^T J d by the finite difference CHEAP[kind]."""
        power, steps = self.CHEAP[kind]
        h = self.eps ** power * self.scale
        changes = self._changes(direction, u, h * np.array(steps))
        value = changes[0] / h if len(steps) == 1 else (changes[0] - changes[1]) / (2 * h)
        return float(_finite(value)), self._rounding(u, h)

    # Richardson's steps, as fractions of h, tried in turn while its error
    # estimate exceeds the tolerance and keeps shrinking: a direction moves every
    # element at once, so one element's step can be far too large (docs/fast-mode.md).
    SHRINKING = (1.0, 1 / 8, 1 / 64, 1 / 512)

    def derivative(self, direction, u, resolution):
        """(value, error estimate) of u^T J d, Richardson-extrapolated from
        steps h and h/2, at smaller h until the error estimate is within
        `resolution` or stops shrinking (rounding then outweighs truncation)."""
        best = None
        for shrink in self.SHRINKING:
            value, error = self._richardson(direction, u, self.h * shrink)
            if not np.isfinite(value) or error <= resolution:
                return value, error
            if best is not None and error >= best[1]:
                break
            best = value, error
        return best

    def _richardson(self, direction, u, h):
        t = h * self.OFFSETS
        value, spread = extrapolated(self._changes(direction, u, t), t)
        return float(_finite(value)), abs(spread) + self._rounding(u, abs(t[2]))

    def _changes(self, direction, u, steps):
        """u . (f(x + t d) - f(x)) for each step t, one perturbed input at a
        time. The outputs are differenced before the dot product: at 10^6
        outputs the rounding of u . f itself would swamp the change."""
        return [self._change(direction, u, t) for t in steps]

    def _change(self, direction, u, t):
        """u . (f(x + t d) - f(x)), in float64 and in place: at 10^8 elements
        each temporary would cost 800 MB."""
        x = np.asarray(direction).astype(np.float64)
        x *= t
        x += self.x_real
        change = self._outputs_at(x)  # a new array, from np.concatenate
        del x
        change -= self.f0
        return _dot(u, change)

    def _rounding(self, u, h):
        """The differences' rounding error: eps per output, adding up like a
        random walk over the outputs, in two evaluations, divided by the step."""
        return 2 * self.eps * float(np.linalg.norm(u * self.f0)) / h

    def _outputs_at(self, x_real):
        """All differentiable outputs' real components at input i = x_real."""
        xi = layout.from_real_view(x_real[None], self.x.dtype, self.x.shape)[0]
        return np.concatenate([layout.real_view(y).astype(np.float64, copy=False)
                               for y in self.evaluate.at(self.i, xi)])

    def column(self, c):
        """The finite differences of every output with respect to real component
        c alone, as full mode takes them (its steps, kinks and bounds)."""
        if self._steps is None:
            self._steps = step_scales(self.x_real, self.precision)
        value, estimate, kink, (low, high) = one_column(self._outputs_at, self.x_real, c,
                                                        self._steps, self.f0, self.precision)
        rows = np.flatnonzero((value != 0) | kink)
        return NumericColumn(rows, value[rows], low[rows], high[rows],
                             np.where(kink, 0.0, estimate)[rows], kink[rows])


class Plan:
    """One input's projections and their finite differences, each computed
    when first needed: the cheapest that resolves the gradient's tolerance,
    then Richardson extrapolation where a gradient disagrees with that."""

    def __init__(self, directional, projections):
        self.directional, self.projections = directional, projections
        self._cheap, self._richardson = {}, {}
        # Components that localisation met whose gradients agree with their own
        # finite differences (most on a kink, see localise.py): left out of every
        # projection, and judged on their own in every mode.
        self.left_out = {}  # column -> NumericColumn

    def judge(self, k, gradient, atol, rtol):
        """Projection k's finding for one mode's gradient (the VJP with its u):
        by the cheap finite difference if it resolves the tolerance and agrees,
        else by Richardson's."""
        p = self.projections[k]
        tolerance = gradient_tolerance(gradient, p.v, p.u, atol, rtol)
        cheap = self.cheap(k, tolerance)
        finding = _finding(gradient, p, cheap, tolerance) if cheap is not None else None
        if finding is None or not finding.ok:
            finding = _finding(gradient, p, self.richardson(k, tolerance), tolerance)
        return finding

    def cheap(self, k, resolution):
        """(value, error) for projection k, or None when no cheap finite
        difference resolves `resolution` (the gradient's own tolerance)."""
        if k not in self._cheap:
            p = self.projections[k]
            self._cheap[k] = self.directional.cheapest(p.v, p.u, resolution)
        cheap = self._cheap[k]
        return cheap if cheap is not None and cheap[1] <= resolution else None

    def richardson(self, k, resolution):
        if k not in self._richardson:
            p = self.projections[k]
            self._richardson[k] = self.directional.derivative(p.v, p.u, resolution)
        return self._richardson[k]

    @property
    def kinks(self):
        return sum(numeric.on_kink for numeric in self.left_out.values())

    def leave_out(self, column, numeric):
        """Take a component out of every projection."""
        self.left_out[column] = numeric
        for p in self.projections:
            p.v[column] = 0.0
        self._cheap.clear()
        self._richardson.clear()


def _finding(gradient, projection, numeric, tolerance):
    value, error = numeric
    return Finding(float(gradient @ projection.v), float(value),
                   allowed_error(tolerance, float(error)))


def column_finding(column, analytic, numeric, u, kinked_entries, atol, rtol):
    """The verdict on component `column`'s gradient against its own finite
    differences. Each entry on a kink, J[r, c] for r in numeric.kinked_rows
    (`kinked_entries`, from one-hot VJPs), must lie between its one-sided
    differences, as in full mode: weighted together, one row's excess could
    hide in another's range. The other rows are judged together, as
    u . J[:, c] (`analytic`, from the projection's VJP) less the kinked rows'
    share, against Richardson's values."""
    kinked = numeric.kinked
    low, high = numeric.low[kinked], numeric.high[kinked]
    outside = outside_interval(kinked_entries, low, high)
    allowed = _SAFETY * (atol + rtol * np.maximum(np.abs(low), np.abs(high)))
    if np.any(outside > allowed):
        worst = int(np.argmax(outside - allowed))
        row = int(numeric.kinked_rows[worst])
        return Finding(float(kinked_entries[worst]), float(numeric.value[kinked][worst]),
                       float(allowed[worst]), bounds=(float(low[worst]), float(high[worst])),
                       row=row, column=column, entry_analytic=float(kinked_entries[worst]),
                       entry_numeric=float(numeric.value[kinked][worst]),
                       entry_bounds=(float(low[worst]), float(high[worst])))
    smooth_u = u.copy()
    smooth_u[numeric.kinked_rows] = 0.0
    smooth = float(analytic) - float(u[numeric.kinked_rows] @ kinked_entries)
    expected = numeric.interval(smooth_u)[0]
    rows = max(int(np.count_nonzero(smooth_u[numeric.rows])), 1)
    tolerance = rtol * abs(expected) + atol * np.sqrt(rows)
    return Finding(smooth, expected, allowed_error(tolerance, numeric.error(smooth_u)))


def gradient_tolerance(gradient_part, direction, u, atol, rtol):
    """The per-entry tolerances of a projection, adding up like a random walk.
    Non-finite gradient entries get no tolerance: they are wrong whatever it is."""
    return (rtol * _finite_norm(gradient_part, direction)
            + atol * float(np.sqrt(np.count_nonzero(direction) + np.count_nonzero(u))))


_CHUNK = 1 << 20


def _chunks(size):
    return (slice(start, start + _CHUNK) for start in range(0, size, _CHUNK))


def _dot(a, b):
    """a . b in float64, a chunk at a time: a float64 copy of a float32 vector
    would cost 8 bytes per element, at the check's peak."""
    return sum(float(a[c].astype(np.float64) @ b[c]) for c in _chunks(a.size))


def _finite_norm(a, b):
    """The norm of a * b over its finite entries, a chunk at a time (see _dot)."""
    total = 0.0
    for c in _chunks(a.size):
        product = a[c] * b[c].astype(np.float64)
        product = product[np.isfinite(product)]
        total += float(product @ product)
    return float(np.sqrt(total))


def allowed_error(tolerance, fd_error):
    """How far u^T J d may be off for a right gradient: its tolerance plus the
    finite differences' own error, times a safety factor."""
    return _SAFETY * (tolerance + fd_error)


def _finite(values):
    """NaN for every non-finite value: a finite difference that met an infinity."""
    values = np.asarray(values, dtype=np.float64)
    return np.where(np.isfinite(values), values, np.nan)
