"""Fast mode's driver: random projections u^T J v in every mode and device,
against directional finite differences, localised to an entry on failure."""
import numpy as np

from gradcheck import progress
from gradcheck.jacobian import analytic
from gradcheck.methods import localise, projections
from gradcheck.methods.sweep import note_nondeterministic_gradients, run_every_mode
from gradcheck.numerics import dtypes, layout
from gradcheck.report import FINITE_DIFFERENCES, PairResult


def check_by_projections(problem, options, target_for, point, findings):
    """`point` is the reference point (execution.probes.reference_point)."""
    f0 = np.concatenate([layout.real_view(b).astype(np.float64) for b in point.outputs])
    us = projections.draw_cotangents(problem.n_rows, options.rng, problem.batch)
    plans = {}
    for i in problem.wrt:
        # As in full mode: steps for the coarsest of the input, what the
        # function computes in, and its outputs.
        wide = point.inputs[i]
        precision = dtypes.coarsest(wide.dtype, problem.tolerances.computed_in or wide.dtype,
                                    *(b.dtype for b in point.outputs))
        directional = projections.Directional(point.evaluate, i, wide, f0, precision)
        plans[i] = projections.Plan(
            directional, projections.draw_projections(us, problem.inputs[i].real_size, options.rng))

    def measure(run, where):
        return _projected_pairs(problem, run, plans, where)

    checked = run_every_mode(problem, options, target_for, measure, findings)
    for pairs, _, _ in checked.values():
        findings.pairs.extend(pairs)
    note_nondeterministic_gradients(problem, options, checked, target_for, findings)
    _note_left_out(plans, problem, findings)


def _note_left_out(plans, problem, findings):
    for i, plan in plans.items():
        if plan.left_out:
            findings.note(
                f"Fast mode judged {len(plan.left_out)} real components of "
                f"{problem.inputs[i].name} on their own, as full mode would ({plan.kinks} on a "
                "kink or step, where a gradient passes if it lies between the one-sided "
                "differences), and left them out of the projections: a difference along a "
                "random direction is not the gradient's where the function bends sharply.")


def _projected_pairs(problem, run, plans, where):
    """Every input's projections in one mode, as report rows."""
    us = [p.u for p in plans[problem.wrt[0]].projections]
    grads = run.vjp(_as_cotangents(problem.diff_specs, us))
    # Shape and dtype as full mode checks them, before any row of this mode is reported.
    for position, i in enumerate(problem.wrt):
        analytic.check_gradient_shape(grads[position], problem.inputs[i], len(us))
    pairs = []
    progress.expect(progress.PROJECTIONS, len(problem.wrt) * len(us))
    for position, i in enumerate(problem.wrt):
        plan, x = plans[i], problem.inputs[i]
        tolerance = problem.tolerances.of_pair(x.dtype, *(s.dtype for s in problem.diff_specs))
        gradients = layout.real_view_batch(grads[position])
        findings = []
        for k in range(len(plan.projections)):
            # One row in float64 at a time: at 10^8 elements each costs 800 MB.
            findings.append(localise.projection_finding(
                plan, k, gradients[k].astype(np.float64), _vjp_rows(problem, run, position),
                *tolerance))
            progress.advance(progress.PROJECTIONS)
        pairs.append(_pair(problem, x, findings, plan, where, tolerance))
    return pairs


def _as_cotangents(diff_specs, us):
    """One cotangent array per output, rows = the given real vectors over all outputs."""
    result = []
    for k, rows in layout.output_rows(diff_specs):
        real = np.stack([u[rows] for u in us])
        dtype = dtypes.numpy_dtype(diff_specs[k].dtype)
        result.append(layout.from_real_view(real.astype(layout.real_numpy_dtype(dtype)), dtype,
                                            diff_specs[k].shape))
    return result


def _vjp_rows(problem, run, position):
    def rows_of(us):
        grads = run.vjp(_as_cotangents(problem.diff_specs, us))
        return layout.real_view_batch(grads[position]).astype(np.float64)

    return rows_of


def _pair(problem, x, findings, plan, where, tolerance):
    device_name, mode = where
    atol, rtol = tolerance
    failed = [f for f in findings if not f.ok]
    worst = failed[0] if failed else max(findings, key=lambda f: f.error)
    output, worst_output, worst_input = "all outputs", "(projection)", "(projection)"
    actual, expected, bounds = worst.analytic, worst.numeric, worst.bounds
    if worst.row is not None:
        spec, component = _output_of(problem.diff_specs, worst.row)
        output = spec.name
        worst_output = layout.component_label(spec.name, spec.shape, spec.is_complex, component)
        worst_input = layout.component_label(x.name, x.shape, x.is_complex, worst.column)
        actual, expected, bounds = worst.entry_analytic, worst.entry_numeric, worst.entry_bounds
    errors = [f.error for f in findings]
    return PairResult(
        device=device_name, mode=mode, order=problem.order, output=output, input=x.name,
        against=FINITE_DIFFERENCES, dtype=x.dtype, output_shape=(), input_shape=x.shape,
        atol=atol, rtol=rtol, n_total=len(findings), n_failed=len(failed), n_unreliable=0,
        max_abs_error=max(errors), max_rel_error=max(e / max(abs(f.numeric), atol)
                                                     for e, f in zip(errors, findings)),
        worst_output=worst_output, worst_input=worst_input, worst_actual=actual,
        worst_expected=expected, n_kinks=plan.kinks, worst_bounds=bounds, projections=True,
        left_out=len(plan.left_out), unresolved=worst.unresolved)


def _output_of(diff_specs, row):
    """(output spec, component) of a row over all outputs."""
    for k, rows in layout.output_rows(diff_specs):
        if row < rows.stop:
            return diff_specs[k], row - rows.start
    raise IndexError(row)
