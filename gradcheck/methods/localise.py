"""From a projection that disagrees to the guilty Jacobian entry, by bisection.

The input components are bisected first (finite differences along v
restricted to each half), then the outputs (VJPs with u restricted to each
half): O(log n + log m) further evaluations.

The component bisection lands on is then checked on its own, as full mode
would. Its gradient may well be right: on a kink (relu at 0), or within a step
of one, a directional difference is not the gradient's, and one such component
makes a right projection fail. A component whose gradient agrees with its own
finite differences (between the one-sided ones, on a kink) is left out of
every projection, and the projection is judged again.
"""
import numpy as np

from gradcheck.methods.projections import allowed_error, column_finding, gradient_tolerance
from gradcheck.numerics.compare import outside_interval

# Past this many components left out of one input, fast mode gives up on the
# projection (each costs about log2(n) evaluations) and says to use full mode.
MAX_LEFT_OUT = 64
# A component with more rows on a kink than this is not judged on its own (one
# VJP per such row): the projection is left failing, and the check says why.
MAX_KINKED_ROWS = 1024
# One-hot cotangents per VJP call, as entries (rows x outputs).
_ONE_HOT_ENTRIES = 1 << 22


def projection_finding(plan, k, gradient, vjp_rows, atol, rtol):
    """Projection k's verdict on one mode's gradient, localised if it fails.
    `vjp_rows(us)`: the gradients (len(us), n) for the cotangents `us`."""
    finding = plan.judge(k, gradient, atol, rtol)
    projection = plan.projections[k]
    while not finding.ok:
        column = guilty_column(plan.directional, gradient, projection, atol, rtol)
        numeric = plan.directional.column(column)
        finding.unresolved = _beyond_reach(plan, numeric)
        if finding.unresolved:
            return guilty_row(finding, column, numeric, projection.u, vjp_rows)
        alone = judged_alone(column, gradient, numeric, projection.u, vjp_rows, atol, rtol)
        if not alone.ok:
            return alone
        plan.leave_out(column, numeric)
        finding = plan.judge(k, gradient, atol, rtol)
    return _left_out_failing(plan, projection.u, gradient, vjp_rows, atol, rtol) or finding


def _beyond_reach(plan, numeric):
    """Why the component bisection reached cannot be judged on its own, or ''."""
    if len(plan.left_out) >= MAX_LEFT_OUT:
        return (f"bisection led to {len(plan.left_out)} elements whose gradients agree with "
                f"their own finite differences ({plan.kinks} on a kink or step, where a "
                "directional difference says nothing about the gradient), and fast mode "
                "stops there")
    if len(numeric.kinked_rows) > MAX_KINKED_ROWS:
        return (f"bisection led to an element on a kink or step in {len(numeric.kinked_rows)} "
                f"outputs, more than fast mode judges one by one ({MAX_KINKED_ROWS})")
    return ""


def _left_out_failing(plan, u, gradient, vjp_rows, atol, rtol):
    """The first component left out (in this mode or an earlier one) whose
    gradient in this mode disagrees with its own finite differences, localised;
    or None."""
    for column, numeric in plan.left_out.items():
        finding = judged_alone(column, gradient, numeric, u, vjp_rows, atol, rtol)
        if not finding.ok:
            return finding
    return None


def judged_alone(column, gradient, numeric, u, vjp_rows, atol, rtol):
    """The verdict on one component against its own finite differences
    (fast.column_finding), localised to an entry if it fails."""
    kinked = numeric.kinked_rows
    entries = _entries(vjp_rows, u.size, kinked, column) if kinked.size else np.zeros(0)
    finding = column_finding(column, gradient[column], numeric, u, entries, atol, rtol)
    if finding.ok or finding.row is not None:
        return finding
    smooth_u = u.copy()
    smooth_u[kinked] = 0.0
    return guilty_row(finding, column, numeric, smooth_u, vjp_rows)


def _entries(vjp_rows, n_rows, rows, column):
    """J[rows, column], from VJPs with one-hot cotangents, a few rows a call."""
    chunk = max(1, _ONE_HOT_ENTRIES // max(n_rows, 1))
    values = []
    for start in range(0, len(rows), chunk):
        part = rows[start:start + chunk]
        units = np.zeros((len(part), n_rows))
        units[np.arange(len(part)), part] = 1.0
        values.append(vjp_rows(list(units))[:, column])
    return np.concatenate(values)


def guilty_column(directional, gradient, projection, atol, rtol):
    """The input component where u^T J v is most wrong, by bisecting v's support."""
    u, v = projection.u, projection.v
    kind = directional.cheap_kind(u, gradient_tolerance(gradient, v, u, atol, rtol))
    if kind is None:
        return _bisect(directional.derivative, gradient, u, v, atol, rtol)
    return _bisect_cheaply(lambda d: directional.cheap(d, u, kind), gradient, u, v, atol, rtol)


def _bisect(derivative, gradient, u, v, atol, rtol):
    """Each half by Richardson's extrapolation."""
    support = np.flatnonzero(v)
    while len(support) > 1:
        halves = np.array_split(support, 2)
        tolerances = [gradient_tolerance(gradient[h], v[h], u, atol, rtol) for h in halves]
        numeric = [derivative(_restricted(v, h), u, t) for h, t in zip(halves, tolerances)]
        excess = [_excess(gradient, v, h, n, e, t)
                  for h, (n, e), t in zip(halves, numeric, tolerances)]
        support = halves[_most_wrong(excess)]
    return int(support[0])


def _bisect_cheaply(difference, gradient, u, v, atol, rtol):
    """By the cheap finite difference that resolves the whole projection, one
    evaluation a level: the second half's difference is the whole's minus the
    first's. Its tiny steps cross far fewer of the points where the function
    bends sharply (relu near 0) than Richardson's: at 10^6 elements, hundreds
    lie within Richardson's step of a kink."""
    support = np.flatnonzero(v)
    whole, error = difference(v)
    while len(support) > 1:
        halves = np.array_split(support, 2)
        first = difference(_restricted(v, halves[0]))[0]
        numeric = [first, whole - first]
        excess = [_excess(gradient, v, h, n, error,
                          gradient_tolerance(gradient[h], v[h], u, atol, rtol))
                  for h, n in zip(halves, numeric)]
        pick = _most_wrong(excess)
        support, whole = halves[pick], numeric[pick]
    return int(support[0])


def _restricted(v, indices):
    return np.where(np.isin(np.arange(v.size), indices), v, 0.0)


def _excess(gradient, v, half, numeric, fd_error, tolerance):
    """How far the half's gradient misses its finite difference, past what it
    is allowed. From its own entries only: a NaN elsewhere in the gradient
    would make every half's value NaN (NaN * 0)."""
    return abs(float(gradient[half] @ v[half]) - numeric) - allowed_error(tolerance, fd_error)


def guilty_row(finding, column, numeric, u, vjp_rows):
    """Name the output whose gradient with respect to `column` is most wrong,
    by bisecting u's support; the finding then holds that entry."""
    rows = np.flatnonzero(u)
    while len(rows) > 1:
        halves = np.array_split(rows, 2)
        masks = [np.where(np.isin(np.arange(u.size), h), u, 0.0) for h in halves]
        analytic = vjp_rows(masks)[:, column]
        excess = [float(outside_interval(a, *numeric.interval(m))) for a, m in zip(analytic, masks)]
        # TensorFlow's VJP keeps a NaN of the gradient where the cotangent is 0
        # (0 * NaN), so both halves can be NaN: then take the outputs that the
        # finite differences say depend on this input element.
        rows = halves[_most_wrong(excess, [numeric.dependence(h) for h in halves])]
    row = int(rows[0]) if len(rows) else int(np.argmax(u != 0))
    finding.row, finding.column = row, column
    finding.entry_analytic = float(_entries(vjp_rows, u.size, np.array([row]), column)[0])
    finding.entry_numeric, finding.entry_bounds = numeric.entry(row)
    return finding


def _most_wrong(excess, tie_break=(0.0, 0.0)):
    """The index of the largest excess, a NaN one (a non-finite gradient or finite
    difference) counting as infinite; ties go to the larger `tie_break`."""
    keys = [(np.inf if np.isnan(e) else e, np.inf if np.isnan(t) else t)
            for e, t in zip(excess, tie_break)]
    return max(range(len(keys)), key=keys.__getitem__)
