"""`check_gradients`: the one call that compares TensorFlow's gradients with
finite differences (or a declared gradient), in every mode and on every device
asked for."""
import contextlib
import re

import numpy as np

from gradcheck import _tf
from gradcheck.errors import CheckSetupError, GradientCheckError
from gradcheck.execution import evaluator, probes, sources
from gradcheck.execution import modes as execution_modes
from gradcheck.execution.devices import CPU, resolve_devices, short_name
from gradcheck.execution.inputs import captured_variables, normalise_inputs, require_finite_inputs
from gradcheck.execution.outputs import flat_function, function_name, output_specs
from gradcheck.jacobian import analytic, known
from gradcheck.jacobian import forward_mode as jvp
from gradcheck.methods import localise, projections
from gradcheck.numerics import compare, compressed, dtypes, layout, memory
from gradcheck.numerics import finite_differences as numeric
from gradcheck.report import DECLARED, FINITE_DIFFERENCES, GradientReport, ModeResult, PairResult

METHODS = ("auto", "full", "fast")
# method="auto" checks the full Jacobian up to this many real entries, else projections.
AUTO_FULL_LIMIT = 1 << 20
BATCH_BUDGET_BYTES = 64 << 20


@memory.ordinary_pages()
def check_gradients(fn, inputs, *, modes=None, devices=None, method="auto", order=1,
                    atol=None, rtol=None, eps=None, seed=0, raise_on_failure=True,
                    reference=None, override_map=None, forward_mode=False, strict=False):
    """Check that the gradients TensorFlow uses for `fn` match finite differences.

    fn: takes one tensor per element of `inputs`, returns a tensor or a nest of them.
    inputs: numpy arrays, eager tensors or Python numbers. Floating and complex
        inputs are differentiated; integer and bool inputs are passed through.
    modes: some of "eager", "function", "graph", "xla" (default: all, or only
        "graph" for a function.Defun). A mode the function cannot run in is
        reported as skipped, with the reason.
    devices: TensorFlow device names (default: the CPU).
    method: "full" (the whole Jacobian), "fast" (random projections u^T J v,
        localised by bisection) or "auto" (full up to 2^20 Jacobian entries).
    order: 1, or 2 to also check the gradient of the gradient.
    atol, rtol: override the per-dtype tolerances (a number, or a dict from
        dtype name to number).
    eps: relative finite-difference step (default: chosen per element).
    seed: seeds the cotangents, so a report can be reproduced.
    raise_on_failure: raise GradientCheckError on a mismatch (else return the
        report with report.ok False).
    reference: the gradient you intend, for gradients that differ from the
        derivative on purpose: a VJP `reference(*inputs, *upstream_grads) -> grads`.
        The check then passes when the gradient in use equals it; the distance
        to the finite differences is still reported.
    override_map: {op type: registered gradient name}, applied with
        Graph.gradient_override_map in the modes where TensorFlow honours it.
    forward_mode: also build the Jacobian from tf.autodiff.ForwardAccumulator
        JVPs (eager, function and xla modes) and compare it with the finite
        differences and with the reverse-mode Jacobian.
    strict: a mode that cannot run here fails the check instead of being skipped.
    """
    method = _validate_options(method, order, eps, reference)
    override_map = sources.validate_override_map(override_map)
    check_inputs = normalise_inputs(fn, inputs)
    require_finite_inputs(check_inputs)
    n_arguments = len(check_inputs)
    with _tf.quiet_logs():
        variables = captured_variables(fn, check_inputs)
    check_inputs += variables
    wrt = [i for i, x in enumerate(check_inputs) if x.differentiable]
    if not wrt:
        raise CheckSetupError(
            "none of the inputs is floating-point or complex ("
            + ", ".join(x.describe() for x in check_inputs)
            + "), so there is no gradient to check. Pass float inputs as float arrays."
        )
    report = GradientReport(
        function=function_name(fn),
        inputs=[x.describe() for x in check_inputs], method=method, seed=seed, strict=strict,
    )
    settings = _Settings(resolve_devices(devices), _mode_names(fn, modes, report),
                         atol, rtol, eps, _check_rng(seed))
    settings.forward_mode = bool(forward_mode)
    settings.method = method
    first = flat_function(fn)
    if variables:
        first = sources.VariableTarget(first, n_arguments, variables)
        report.notes.append("the function reads the variable(s) " + ", ".join(
            x.describe() for x in variables) + "; their gradients are checked too.")
    base = sources.OverriddenTarget(first, override_map) if override_map else first
    # Finite differences run in tf.function; with an override map, or for a
    # Defun (a tape under tf.function gets no gradient for it), they must
    # differentiate the way graph mode does (tf.gradients), for order 2.
    settings.reference_mode = "graph" if override_map or _tf.is_defun(fn) else "function"
    report.source, report.gradients_used = sources.describe_source(
        fn, base, [x.value for x in check_inputs], override_map)
    target_for = _only_where_honoured(lambda mode: base, override_map)
    with _tf.quiet_logs(), _restored(variables):
        if variables:
            probes.require_stateless(flat_function(fn), [x.value for x in check_inputs[:n_arguments]],
                                      variables)
        for current in range(1, order + 1):
            declared = reference if current == 1 else None
            checked = _check_order(current, target_for, check_inputs, wrt, settings, report, declared)
            if current < order:
                target_for = _only_where_honoured(
                    _second_order_targets(base, checked, wrt, check_inputs, settings), override_map)
    if raise_on_failure and not report.ok:
        raise GradientCheckError(report)
    return report


def _check_rng(seed):
    """The check's random numbers (cotangents, projections). Not
    default_rng(seed) itself: inputs drawn from that, as users and the command
    line draw them, would be the very numbers the cotangents are made of."""
    return np.random.default_rng([seed, 0x67726164])


@contextlib.contextmanager
def _restored(variable_inputs):
    """Finite differences assign perturbed values to variables: put them back."""
    try:
        yield
    finally:
        for x in variable_inputs:
            x.variable.assign(x.value)


def _only_where_honoured(target_for, override_map):
    """Modes that use a GradientTape never see an override map: not applicable there."""
    if not override_map:
        return target_for

    def honoured(mode):
        if execution_modes.uses_tape(mode):
            return sources.NotApplicable(sources.OVERRIDE_IGNORED_BY_TAPES)
        return target_for(mode)

    return honoured


class _Settings:
    def __init__(self, devices, mode_names, atol, rtol, eps, rng):
        self.devices = devices
        self.modes = mode_names
        self.atol = atol
        self.rtol = rtol
        self.eps = eps
        self.rng = rng
        self.reference_mode = "function"
        self.computed_in = None  # the dtype a function casts its float64 inputs to, if any
        self.forward_mode = False


def _validate_options(method, order, eps, reference):
    if method not in METHODS:
        raise ValueError(f"unknown method {method!r}; choose from {', '.join(METHODS)}.")
    if order not in (1, 2):
        raise ValueError(f"order must be 1 or 2, got {order!r}.")
    if eps is not None and not (isinstance(eps, (int, float)) and 0 < eps < 1):
        raise ValueError(f"eps is a relative step and must lie in (0, 1), got {eps!r}.")
    if reference is not None and not callable(reference):
        raise TypeError("reference must be a callable: reference(*inputs, *upstream_grads) -> grads.")
    if method == "fast" and reference is not None:
        raise ValueError("reference= needs the full Jacobian: use method='full' (or 'auto').")
    return method


def _mode_names(fn, requested, report):
    if requested is None and _tf.is_defun(fn):
        report.notes.append(
            "function.Defun is graph-only: eager code cannot call it, and a GradientTape under "
            "tf.function gets no gradient for it, so only graph mode is checked. Pass modes= "
            "to see the others.")
        return ["graph"]
    return execution_modes.resolve_modes(requested)


class _Checked:
    """What one order's check learnt that the next order needs."""

    def __init__(self, specs, out_index):
        self.specs = specs
        self.out_index = out_index


def _check_order(order, target_for, check_inputs, wrt, settings, report, declared):
    native = [x.value for x in check_inputs]
    target = target_for(settings.reference_mode)
    values = probes.probe(target, native)
    specs = output_specs(target.output_names, values)
    out_index = [k for k, s in enumerate(specs) if s.differentiable]
    if not out_index:
        raise CheckSetupError(
            "no output of the function is floating-point or complex ("
            + ", ".join(f"{s.name}: {s.dtype}" for s in specs) + "); nothing to differentiate."
        )
    diff_specs = [specs[k] for k in out_index]
    probes.require_finite(values, specs, out_index)
    probes.require_deterministic(target, native, values, specs)
    method = _method_for(settings.method, check_inputs, wrt, diff_specs)
    if order == 1:
        report.method = method
        _note_integer_inputs(check_inputs, wrt, report)
    if method == "full":
        probes.require_jacobian_fits(check_inputs, wrt, diff_specs)

    wide, precision, at_inputs, computed_in = probes.reference_inputs(target, check_inputs, values)
    settings.computed_in = computed_in
    if order == 1:
        report.reference_precision = precision
    evaluate = evaluator.batched_evaluator(target, wide, out_index, CPU)
    if method == "fast":
        count = projections.projection_count(sum(s.real_size for s in diff_specs),
                                      sum(check_inputs[i].real_size for i in wrt))
        context = _OrderContext(order, check_inputs, wrt, out_index, diff_specs, None,
                                count, settings, report, None)
        base = [at_inputs[k] for k in out_index]
        projections_check(context, target_for, evaluate, wide, base)
        return _Checked(specs, out_index)

    scales = analytic.row_scales(sum(s.real_size for s in diff_specs), settings.rng)
    batch = _batch_size(check_inputs, diff_specs)
    context = _OrderContext(order, check_inputs, wrt, out_index, diff_specs, scales, batch,
                            settings, report, None)
    intended = context.declared_jacobian(declared) if declared else None
    results = {}
    for device in settings.devices:
        for mode in settings.modes:
            outcome = context.run_mode(mode, target_for(mode), device)
            if outcome is not None:
                results[(short_name(device), mode)] = outcome
    # The finite differences come after the gradients, whose sparsity lets
    # columns that share no output be perturbed together.
    pattern = _claimed_sparsity(context.jacobians_in_full(results) + ([intended] if intended else []),
                                wrt, diff_specs)
    reference = numeric.numeric_jacobian(evaluate, wide, wrt, diff_specs,
                                         [at_inputs[k] for k in out_index], settings.eps,
                                         pattern=pattern, precision=computed_in)
    _refine_where_gradients_disagree(reference, results, intended, context, pattern)
    context.support = _comparison_support(reference, pattern, context)
    _sharpen_where_gradients_disagree(reference, results, intended, context)
    context.uncertainty = reference.uncertainty
    expected = reference.blocks
    context.kinks = reference.kinks
    context.bounds = reference.bounds
    _note_kinks(reference, check_inputs, wrt, report, order)
    context.judge(results, expected, intended)
    context.note_nondeterministic_gradients(results, target_for)
    if settings.forward_mode and order == 1:
        for (device_name, mode), (blocks, _, _) in results.items():
            if mode in jvp.JVP_MODES:
                context.check_forward_mode(mode, target_for(mode), device_name, blocks,
                                           expected, intended)
    return _Checked(specs, out_index)


def _refine_where_gradients_disagree(reference, results, intended, context, pattern):
    """Columns from compressed differences where any gradient disagrees are
    differenced one at a time, so that a wrong sparsity claim is blamed on the
    right entry rather than on its neighbour in the group.

    Only the pattern's entries are compared: outside it every gradient is zero
    (the pattern is their union) and so is the compressed reference."""
    jacobians = [r[0] for r in results.values()] + ([intended] if intended is not None else [])
    for i in context.wrt:
        if not len(reference.compressed.get(i, [])):
            continue
        atol, rtol = compare.tolerance_for(context.check_inputs[i].dtype, context.settings.atol,
                                           context.settings.rtol)
        suspect = np.zeros(context.check_inputs[i].real_size, dtype=bool)
        for k, rows in layout.output_rows(context.diff_specs):
            entries = pattern[i].entries_in_rows(rows.start, rows.stop)
            for blocks in jacobians:
                suspect |= _disagreeing_columns(blocks[(k, i)], reference.blocks[(k, i)], None,
                                                None, entries, atol, rtol, suspect.size)
        reference.refine(i, np.flatnonzero(suspect))


def _sharpen_where_gradients_disagree(reference, results, intended, context):
    """Columns where a gradient disagrees with the finite differences are
    differenced again at smaller steps, which also bounds their error: a
    verdict of "wrong" then never rests on a difference the reference cannot
    resolve."""
    jacobians = [r[0] for r in results.values()] + ([intended] if intended is not None else [])
    for i in context.wrt:
        atol, rtol = compare.tolerance_for(context.check_inputs[i].dtype, context.settings.atol,
                                           context.settings.rtol)
        suspect = np.zeros(context.check_inputs[i].real_size, dtype=bool)
        for k in range(len(context.diff_specs)):
            entries = context.support.get((k, i))
            for blocks in jacobians:
                suspect |= _disagreeing_columns(blocks[(k, i)], reference.blocks[(k, i)],
                                                reference.kinks[(k, i)],
                                                reference.bounds.get((k, i)), entries, atol, rtol,
                                                suspect.size)
        if suspect.any():
            reference.sharpen(i, np.flatnonzero(suspect))


def _disagreeing_columns(actual, expected, kinks, bounds, entries, atol, rtol, n_columns):
    """bool (n_columns,): columns with an entry outside the tolerance, on
    `entries` (the (rows, columns) support) if given. Entries on a kink (if
    `kinks` is given) count only where they lie outside their `bounds` (see
    richardson.one_sided_bounds), and not at all without bounds."""
    suspect = np.zeros(n_columns, dtype=bool)
    if entries is not None:
        on_kink = None if kinks is None else kinks[entries]
        sides = None if bounds is None or kinks is None else bounds[:, entries[0], entries[1]]
        suspect[entries[1][_wrong(actual[entries], expected[entries], on_kink, sides, atol,
                                  rtol)]] = True
        return suspect
    if actual.ndim != 2:
        return suspect
    # A few rows at a time: the temporaries then stay in cache.
    rows = max(1, (1 << 16) // max(actual.shape[1], 1))
    for start in range(0, actual.shape[0], rows):
        part = slice(start, start + rows)
        on_kink = None if kinks is None else kinks[part]
        sides = None if bounds is None or kinks is None else bounds[:, part]
        suspect |= _wrong(actual[part], expected[part], on_kink, sides, atol, rtol).any(axis=0)
    return suspect


def _wrong(actual, expected, kinks, bounds, atol, rtol):
    """Entries outside atol + rtol * |expected|; on a kink, outside the bounds
    as the comparison judges them (never, without bounds)."""
    with np.errstate(invalid="ignore"):
        error, magnitude = np.abs(actual - expected), np.abs(expected)
        if kinks is not None and kinks.any():
            if bounds is None:
                error[kinks] = 0.0
            else:
                compare.judge_kinks(actual, kinks, bounds, error, magnitude)
        return ~(error <= atol + rtol * magnitude)


def _comparison_support(reference, pattern, context):
    """{(k, i): (rows, columns)} where the gradients or the reference can be
    nonzero, for inputs whose reference came (mostly) from compressed differences:
    the pattern, plus every column differenced on its own. Blocks that are not
    sparse enough for this to pay are compared in full."""
    support = {}
    for i, grouped in reference.compressed.items():
        if not len(grouped):
            continue
        alone = np.setdiff1d(np.arange(pattern[i].shape[1]), grouped)
        entries = pattern[i]
        if alone.size:
            mask = entries.mask.copy()
            mask[:, alone] = True
            entries = compressed.Sparsity(mask)
        if entries.count * 8 > entries.mask.size:
            continue
        for k, rows in layout.output_rows(context.diff_specs):
            support[(k, i)] = entries.entries_in_rows(rows.start, rows.stop)
    return support


def _claimed_sparsity(jacobians, wrt, diff_specs):
    """{input: (outputs, columns) bool}: nonzero in any mode's gradient, or None."""
    if not jacobians:
        return None
    pattern = {}
    for i in wrt:
        rows = [np.zeros_like(jacobians[0][(k, i)], dtype=bool) for k in range(len(diff_specs))]
        for blocks in jacobians:
            for k in range(len(diff_specs)):
                rows[k] |= blocks[(k, i)] != 0
        pattern[i] = compressed.Sparsity(rows[0] if len(rows) == 1 else np.concatenate(rows))
    return pattern


def _method_for(requested, check_inputs, wrt, diff_specs):
    if requested != "auto":
        return requested
    rows = sum(s.real_size for s in diff_specs)
    columns = sum(check_inputs[i].real_size for i in wrt)
    return "full" if rows * columns <= AUTO_FULL_LIMIT else "fast"


def projections_check(context, target_for, evaluate, wide, base):
    """Fast mode: random projections in every mode and device, localised on failure."""
    out_size = sum(s.real_size for s in context.diff_specs)
    f0 = np.concatenate([layout.real_view(b).astype(np.float64) for b in base])
    rng = context.settings.rng
    us = projections.draw_cotangents(out_size, rng, context.batch)
    plans = {}
    for i in context.wrt:
        # As in full mode: steps for the coarsest of the input, what the
        # function computes in, and its outputs.
        precision = dtypes.coarsest(wide[i].dtype, context.settings.computed_in or wide[i].dtype,
                                     *(b.dtype for b in base))
        directional = projections.Directional(evaluate, i, wide[i], f0, precision)
        plans[i] = projections.Plan(directional,
                             projections.draw_projections(us, context.check_inputs[i].real_size, rng))
    checked = {}
    for device in context.settings.devices:
        for mode in context.settings.modes:
            if context.run_mode(mode, target_for(mode), device,
                                measure=lambda run, where: _project(context, run, plans, where)):
                checked[(short_name(device), mode)] = True
    context.note_nondeterministic_gradients(checked, target_for)
    _note_left_out(plans, context.check_inputs, context.report)


def _note_left_out(plans, check_inputs, report):
    for i, plan in plans.items():
        if plan.left_out:
            report.notes.append(
                f"Fast mode judged {len(plan.left_out)} real components of {check_inputs[i].name} "
                f"on their own, as full mode would ({plan.kinks} on a kink or step, where a "
                "gradient passes if it lies between the one-sided differences), and left them "
                "out of the projections: a difference along a random direction is not the "
                "gradient's where the function bends sharply.")


def _project(context, run, plans, where):
    """Every input's projections in one mode, as report rows."""
    us = [p.u for p in plans[context.wrt[0]].projections]
    grads = run.vjp(_as_cotangents(context.diff_specs, us))
    # Shape and dtype as full mode checks them, before any row of this mode is reported.
    for position, i in enumerate(context.wrt):
        analytic.check_gradient_shape(grads[position], context.check_inputs[i], len(us))
    for position, i in enumerate(context.wrt):
        plan = plans[i]
        x = context.check_inputs[i]
        atol, rtol = _pair_tolerance(context.settings, x.dtype,
                                     *(spec.dtype for spec in context.diff_specs))
        gradients = layout.real_view_batch(grads[position]).astype(np.float64, copy=False)
        findings = [localise.projection_finding(plan, k, gradients[k],
                                                _vjp_rows(context, run, position), atol, rtol)
                    for k in range(len(plan.projections))]
        context.report.pairs.append(_fast_pair(context, x, findings, plan, where, atol, rtol))
    return True


def _as_cotangents(diff_specs, us):
    """One cotangent array per output, rows = the given real vectors over all outputs."""
    result = []
    for k, rows in layout.output_rows(diff_specs):
        real = np.stack([u[rows] for u in us])
        dtype = dtypes.numpy_dtype(diff_specs[k].dtype)
        result.append(layout.from_real_view(real.astype(layout.real_numpy_dtype(dtype)), dtype,
                                            diff_specs[k].shape))
    return result


def _vjp_rows(context, run, position):
    def rows_of(us):
        grads = run.vjp(_as_cotangents(context.diff_specs, us))
        return layout.real_view_batch(grads[position]).astype(np.float64)

    return rows_of


def _fast_pair(context, x, findings, plan, where, atol, rtol):
    device_name, mode = where
    failed = [f for f in findings if not f.ok]
    worst = failed[0] if failed else max(findings, key=lambda f: f.error)
    output, worst_output, worst_input = "all outputs", "(projection)", "(projection)"
    actual, expected, bounds = worst.analytic, worst.numeric, worst.bounds
    if worst.row is not None:
        spec, component = _output_of(context.diff_specs, worst.row)
        output = spec.name
        worst_output = layout.component_label(spec.name, spec.shape, spec.is_complex, component)
        worst_input = layout.component_label(x.name, x.shape, x.is_complex, worst.column)
        actual, expected, bounds = worst.entry_analytic, worst.entry_numeric, worst.entry_bounds
    errors = [f.error for f in findings]
    return PairResult(
        device=device_name, mode=mode, order=context.order, output=output, input=x.name,
        against=FINITE_DIFFERENCES, dtype=x.dtype, output_shape=(), input_shape=x.shape,
        atol=atol, rtol=rtol, n_total=len(findings), n_failed=len(failed), n_unreliable=0,
        max_abs_error=max(errors), max_rel_error=max(e / max(abs(f.numeric), atol)
                                                     for e, f in zip(errors, findings)),
        worst_output=worst_output, worst_input=worst_input, worst_actual=actual,
        worst_expected=expected, n_kinks=plan.kinks, worst_bounds=bounds, projections=True,
        left_out=len(plan.left_out), unresolved=worst.unresolved)


def _pair_tolerance(settings, input_dtype, *output_dtypes):
    """(atol, rtol) for d(outputs) / d(input): the input dtype's, unless the
    outputs or the function's own arithmetic are coarser (d float32 / d float64
    is only as precise as float32)."""
    precision = dtypes.coarsest(input_dtype, *output_dtypes, settings.computed_in or input_dtype)
    return compare.tolerance_for(_like(input_dtype, precision), settings.atol, settings.rtol)


def _like(dtype, precision):
    """`precision` (a real dtype name), complex if `dtype` is."""
    if dtype.startswith("complex") and not precision.startswith("complex"):
        return {"float64": "complex128"}.get(precision, "complex64")
    return precision


def _output_of(diff_specs, row):
    for spec in diff_specs:
        if row < spec.real_size:
            return spec, row
        row -= spec.real_size
    raise IndexError(row)


def _note_kinks(reference, check_inputs, wrt, report, order):
    """Count the input elements whose finite differences sit on a kink."""
    for i in wrt:
        kinked = np.zeros(check_inputs[i].real_size, dtype=bool)
        for (_, j), mask in reference.kinks.items():
            if j == i and mask.size:
                kinked |= mask.any(axis=0)
        if order == 1:
            report.kinked_elements += int(kinked.sum())
            report.checked_elements += kinked.size
        if kinked.any():
            report.notes.append(
                f"{int(kinked.sum())} of {kinked.size} real components of {check_inputs[i].name}"
                f"{'' if order == 1 else f' (order {order})'} sit on a kink or step (the one-sided "
                "differences disagree); there a gradient passes if it lies between them.")


def _note_integer_inputs(check_inputs, wrt, report):
    for i, x in enumerate(check_inputs):
        if i not in wrt:
            report.notes.append(f"{x.name} ({x.dtype}) is not differentiable and gets no "
                                "gradient, as TensorFlow expects for integer and bool inputs.")


class _OrderContext:
    """Everything one order of one check shares across its modes and devices."""

    def __init__(self, order, check_inputs, wrt, out_index, diff_specs, scales, batch,
                 settings, report, kinks):
        self.order, self.check_inputs, self.wrt, self.out_index = order, check_inputs, wrt, out_index
        self.diff_specs, self.scales, self.batch = diff_specs, scales, batch
        self.settings, self.report, self.kinks = settings, report, kinks
        self.support, self.uncertainty, self.bounds = {}, {}, {}
        self.known = None  # the first mode's Jacobian: see mode_jacobian

    def mode_jacobian(self, run):
        """The first mode's Jacobian in full; each later one from a VJP per group
        of rows that share no column, or from a few random projections
        (known.py), when it matches the first, else in full too."""
        if self.known is not None:
            blocks = self.known.jacobian(run, self._mode_tolerance)
            if blocks is not None:
                return blocks
        blocks = self.jacobian(run)
        if self.known is None:
            self.known = known.KnownJacobian(blocks, self.check_inputs, self.wrt,
                                                       self.diff_specs, self.settings.rng)
        return blocks

    def jacobians_in_full(self, results):
        """The modes' Jacobians, less those from grouped rows or projections:
        those are nonzero only where the first mode's is."""
        made = self.known.made if self.known is not None else []
        return [r[0] for r in results.values() if not any(r[0] is m for m in made)]

    def _mode_tolerance(self, k, i):
        return _pair_tolerance(self.settings, self.check_inputs[i].dtype, self.diff_specs[k].dtype)

    def jacobian(self, run):
        """By columns when the inputs are the smaller side (verified against
        VJPs), else, or if that fails, by rows."""
        if analytic.columns_pay(self.check_inputs, self.wrt, self.diff_specs):
            try:
                return analytic.jacobian_by_columns(
                    run, self.check_inputs, self.wrt, self.diff_specs, self._column_scales(),
                    self.batch, self.settings.rng, self._tolerance)
            except analytic.ColumnsUnusable as reason:
                note = f"Jacobian columns were not usable ({reason}); it was built row by row."
                if note not in self.report.notes:
                    self.report.notes.append(note)
            except Exception:  # noqa: BLE001  (rows raise the real error, if any)
                pass
        return analytic.analytic_jacobian(run, self.check_inputs, self.wrt, self.diff_specs,
                                          self.scales, self.batch)

    def _column_scales(self):
        if getattr(self, "column_scales", None) is None:
            n_columns = sum(self.check_inputs[i].real_size for i in self.wrt)
            self.column_scales = analytic.row_scales(n_columns, self.settings.rng)
        return self.column_scales

    def _tolerance(self, x):
        return compare.tolerance_for(x.dtype, self.settings.atol, self.settings.rtol)

    def declared_jacobian(self, reference):
        names = ", ".join([x.name for x in self.check_inputs]
                          + [f"d_{s.name}" for s in self.diff_specs])
        run = sources.DeclaredGradient(reference, [x.value for x in self.check_inputs], self.wrt,
                                       CPU, names)
        try:
            return self.jacobian(run)
        except analytic.GradientShapeError as error:
            raise CheckSetupError(f"the reference is not usable: {error}") from None

    def run_mode(self, mode, target, device, measure=None):
        """(what `measure(run, where)` returns, by default the analytic Jacobian;
        the ModeResult; the inputs whose gradient was None), or None."""
        device_name = short_name(device)
        native = [x.value for x in self.check_inputs]
        try:
            run = execution_modes.runner(mode, target, native, self.wrt, self.out_index, device,
                                         self.batch)
            run.start()
        except Exception as error:  # noqa: BLE001  (any failure of the forward pass: skip the mode)
            self._forward_failed(device_name, mode, error)
            return None
        try:
            blocks = measure(run, (device_name, mode)) if measure else self.mode_jacobian(run)
        except analytic.GradientShapeError as error:
            self._record(device_name, mode, "failed", str(error))
            return None
        except CheckSetupError:
            raise
        except Exception as error:  # noqa: BLE001  (whatever the gradient raised is the finding)
            forward_error = run.forward_error()
            if forward_error is not None:
                self._forward_failed(device_name, mode, forward_error)
            else:
                status = "skipped" if _is_unsupported(error) else "failed"
                self._record(device_name, mode, status, _gradient_reason(error, self._wrt_inputs()))
            return None
        finally:
            run.close()
        result = self._record(device_name, mode, "checked")
        self._note_gradient_structure(run, device_name, mode)
        return blocks, result, set(run.none_inputs)

    def _forward_failed(self, device_name, mode, error):
        """A mode whose forward pass cannot run is skipped, with the reason."""
        if isinstance(error, CheckSetupError):
            raise error
        if isinstance(error, sources.ModeNotApplicable):
            self._record(device_name, mode, "skipped", f"not applicable: {error}")
        else:
            self._record(device_name, mode, "skipped",
                         "the forward pass cannot run here: " + probes.reason(error))

    def check_forward_mode(self, mode, target, device_name, reverse, expected, intended):
        """The JVP Jacobian against the finite differences (or the declared
        gradient) and against this mode's reverse-mode Jacobian."""
        label = f"{mode} (forward)"
        n_columns = sum(self.check_inputs[i].real_size for i in self.wrt)
        scales = analytic.row_scales(n_columns, self.settings.rng)
        device = next(d for d in self.settings.devices if short_name(d) == device_name)
        try:
            blocks = jvp.forward_jacobian(
                mode, target, self.check_inputs, self.wrt, self.out_index, self.diff_specs,
                device, scales, max(1, min(self.batch, n_columns)))
        except CheckSetupError:
            raise
        except Exception as error:  # noqa: BLE001  (whatever forward mode raised is the finding)
            status = "skipped" if _is_unsupported(error) else "failed"
            self._record(device_name, label, status, "forward mode (ForwardAccumulator) raised "
                         + probes.reason(error))
            return
        self._record(device_name, label, "checked")
        where = (device_name, label)
        self.compare(blocks, expected, FINITE_DIFFERENCES, where, set(), decisive=intended is None,
                     kinks=self.kinks)
        if intended is not None:
            self.compare(blocks, intended, DECLARED, where, set())
        self.compare(blocks, reverse, f"{mode} reverse mode", where, set(), exact_nonfinite=True)

    def _wrt_inputs(self):
        return [self.check_inputs[i] for i in self.wrt]

    def _record(self, device_name, mode, status, reason=""):
        result = ModeResult(device_name, mode, self.order, status, reason)
        self.report.modes.append(result)
        return result

    def note_nondeterministic_gradients(self, results, target_for):
        """A mode whose gradient disagrees gets two VJPs of the same cotangents:
        if they differ, the gradient is random or races, which no comparison
        can tell from a wrong one, and the report says so. Only modes that
        disagree pay for it."""
        disagreeing = {(p.device, p.mode) for p in self.report.pairs
                       if p.order == self.order and p.decisive and not p.ok}
        spreads = {}
        for device_name, mode in sorted(disagreeing & set(results)):
            spread = self._vjp_spread(mode, target_for(mode), device_name)
            if spread is not None:
                spreads[f"{mode} mode on {device_name}"] = spread
        if spreads:
            self.report.notes.append(
                f"the gradient is not deterministic ({', '.join(spreads)}): two VJPs with the "
                f"same cotangents differed by up to {max(spreads.values()):.3g}, so it cannot be "
                "told apart from a wrong one. Give random ops in the gradient a fixed seed "
                "(tf.random.stateless_*); for ops that race on a GPU, try "
                "tf.config.experimental.enable_op_determinism().")

    def _vjp_spread(self, mode, target, device_name):
        """The largest difference between two VJPs of the same random cotangents,
        or None if they are equal (or cannot be run again)."""
        device = next(d for d in self.settings.devices if short_name(d) == device_name)
        try:
            run = execution_modes.runner(mode, target, [x.value for x in self.check_inputs],
                                         self.wrt, self.out_index, device, self.batch)
        except Exception:  # noqa: BLE001  (it ran before: nothing to add if it cannot now)
            return None
        # One row where a batch would be traced anew (tf.function mode and XLA
        # reuse the batch they traced for the Jacobian).
        run.row_by_row = run.row_by_row or mode in ("eager", "graph")
        cotangents = _repeated_cotangents(self.diff_specs, 1 if run.row_by_row else self.batch)
        try:
            run.start()
            first, second = run.vjp(cotangents), run.vjp(cotangents)
        except Exception:  # noqa: BLE001
            return None
        finally:
            run.close()
        if all(np.array_equal(a, b, equal_nan=True) for a, b in zip(first, second)):
            return None
        with np.errstate(invalid="ignore"):
            return max(float(np.nanmax(np.abs(a - b), initial=0.0)) for a, b in zip(first, second))

    def _note_gradient_structure(self, run, device_name, mode):
        where = f"{mode} mode on {device_name}"
        if run.traced_differs:
            self.report.notes.append(
                f"{where}: the gradient computed in a tf.function differs from the one computed "
                "eagerly (the gradient code branches on tf.executing_eagerly() or "
                "tf.inside_function()), so eager mode was checked one row at a time, eagerly.")
        elif run.vectorization_failed:
            self.report.notes.append(f"{where}: tf.vectorized_map could not batch the gradient, "
                                     "so it was computed one Jacobian row at a time.")
        for position in sorted(run.none_inputs):
            self.report.notes.append(f"{where}: the gradient with respect to "
                                     f"{self.check_inputs[self.wrt[position]].name} is None "
                                     "(not connected); it was compared as zeros.")
        for i in getattr(run, "integer_inputs_with_gradient", []):
            x = self.check_inputs[i]
            self._record(device_name, mode, "failed",
                         f"{x.name} is {x.dtype} but tf.gradients returned a gradient for it; a "
                         "gradient function should return None for integer inputs.")

    def judge(self, results, expected, intended):
        """Compare every mode with the references, then the modes with each other."""
        agreement = {}
        for (device_name, mode), (blocks, result, none_inputs) in results.items():
            where = (device_name, mode)
            fd_pairs = self.compare(blocks, expected, FINITE_DIFFERENCES, where, none_inputs,
                                    decisive=intended is None, kinks=self.kinks,
                                    support=self.support)
            declared_pairs = (self.compare(blocks, intended, DECLARED, where, none_inputs,
                                           support=self.support)
                              if intended is not None else None)
            result.obtained = _obtained(fd_pairs, declared_pairs, none_inputs, len(self.wrt))
            agreement[where] = all(p.ok for p in (declared_pairs or fd_pairs))
        if intended is not None and _same_jacobian(intended, expected, self):
            self.report.notes.append("the declared reference equals the finite differences: "
                                     "this gradient is not wrong on purpose.")
        self.compare_modes(results, agreement)

    def compare_modes(self, results, agreement):
        if len(results) < 2:
            return
        # The baseline is the first mode whose gradient is right, so that one
        # broken mode does not make every other look broken.
        keys = list(results)
        base = next((k for k in keys if agreement[k]), keys[0])
        label = f"{base[1]} on {base[0]}"
        for key in keys:
            if key != base:
                self.compare(results[key][0], results[base][0], label, key, results[key][2],
                             support=self.support, exact_nonfinite=True)

    def compare(self, actual, expected, against, where, none_inputs, decisive=True, kinks=None,
                support=None, exact_nonfinite=False):
        """Report rows for every block; `support` (see _comparison_support) only
        for arrays that are zero outside the gradients' joined sparsity."""
        device_name, mode = where
        support = support or {}
        pairs = []
        for position, i in enumerate(self.wrt):
            x = self.check_inputs[i]
            for k, spec in enumerate(self.diff_specs):
                atol, rtol = _pair_tolerance(self.settings, x.dtype, spec.dtype)
                slack = self.uncertainty.get((k, i)) if against == FINITE_DIFFERENCES else None
                result = compare.compare_block(actual[(k, i)], expected[(k, i)], atol, rtol,
                                               None if kinks is None else kinks[(k, i)],
                                               support.get((k, i)), exact_nonfinite, slack,
                                               self.bounds.get((k, i)))
                worst_output = worst_input = "(no entries)"
                if result.worst:
                    row, col = result.worst
                    worst_output = layout.component_label(spec.name, spec.shape, spec.is_complex, row)
                    worst_input = layout.component_label(x.name, x.shape, x.is_complex, col)
                pairs.append(PairResult(
                    device=device_name, mode=mode, order=self.order, output=spec.name,
                    input=x.name, against=against, dtype=x.dtype, output_shape=spec.shape,
                    input_shape=x.shape, atol=atol, rtol=rtol, n_total=result.n_total,
                    n_failed=result.n_failed, n_unreliable=result.n_unreliable,
                    n_kinks=result.n_kinks, reference_uncertainty=result.worst_slack,
                    worst_bounds=result.worst_bounds,
                    max_abs_error=result.max_abs_error, max_rel_error=result.max_rel_error,
                    worst_output=worst_output, worst_input=worst_input,
                    worst_actual=result.worst_actual, worst_expected=result.worst_expected,
                    gradient_is_none=position in none_inputs, decisive=decisive,
                    arrays=None if result.ok else (actual[(k, i)], expected[(k, i)]),
                ))
        self.report.pairs.extend(pairs)
        return pairs


def _obtained(fd_pairs, declared_pairs, none_inputs, n_wrt):
    """Which gradient a mode actually got, in words."""
    is_derivative = all(p.ok for p in fd_pairs)
    if declared_pairs is None:
        if is_derivative:
            return "the derivative"
        return "no gradient (None)" if len(none_inputs) == n_wrt else "a gradient that is not the derivative"
    is_declared = all(p.ok for p in declared_pairs)
    if is_declared:
        return "the declared gradient"
    if is_derivative:
        return "the derivative, not the declared gradient (the override did not take effect)"
    if len(none_inputs) == n_wrt:
        return "no gradient (None)"
    return "neither the derivative nor the declared gradient"


def _same_jacobian(first, second, context):
    for i in context.wrt:
        atol, rtol = compare.tolerance_for(context.check_inputs[i].dtype,
                                           context.settings.atol, context.settings.rtol)
        for k in range(len(context.diff_specs)):
            if not compare.compare_block(first[(k, i)], second[(k, i)], atol, rtol).ok:
                return False
    return True


def _batch_size(check_inputs, diff_specs):
    rows = sum(s.real_size for s in diff_specs)
    per_row = 8 * (sum(x.real_size for x in check_inputs) + rows) * 4
    return int(max(1, min(rows, BATCH_BUDGET_BYTES // max(per_row, 1), 4096)))


def _second_order_targets(first, checked, wrt, check_inputs, settings):
    """Targets whose outputs are the VJPs of `first`, for a fixed random cotangent."""
    diff = [checked.specs[k] for k in checked.out_index]
    cotangents = [_random_cotangent(spec, settings.rng) for spec in diff]
    names = [f"grad {check_inputs[i].name}" for i in wrt]

    def target_for(mode):
        return _GradientTarget(mode, first, wrt, checked.out_index, cotangents, names)

    return target_for


class _GradientTarget:
    def __init__(self, mode, first, wrt, out_index, cotangents, names):
        self.mode, self.first, self.wrt, self.out_index = mode, first, wrt, out_index
        self.cotangents, self.output_names = cotangents, names
        self.variable_slots = getattr(first, "variable_slots", {})

    def __call__(self, tensors):
        tf = _tf.tf()
        return execution_modes.vjp_inline(self.mode, self.first, tensors, self.wrt, self.out_index,
                                          [tf.constant(c) for c in self.cotangents])


def _repeated_cotangents(specs, rows):
    """One random cotangent per output, repeated `rows` times (a leading batch axis)."""
    rng = np.random.default_rng(0)
    return [np.broadcast_to(_random_cotangent(spec, rng).astype(dtypes.numpy_dtype(spec.dtype)),
                            (rows,) + tuple(spec.shape)).copy() for spec in specs]


def _random_cotangent(spec, rng):
    real = rng.uniform(0.5, 1.5, size=spec.real_size) * rng.choice([-1.0, 1.0], size=spec.real_size)
    return layout.from_real_view(real[None], np.complex128 if spec.is_complex else np.float64,
                                 spec.shape)[0]


_UNSUPPORTED_MARKERS = ("unsupported operations", "No registered", "Cannot assign a device",
                        "Could not satisfy explicit device", "not supported on XLA")


def _is_unsupported(error):
    return any(marker in str(error) for marker in _UNSUPPORTED_MARKERS)


def _gradient_reason(error, inputs):
    if "No gradient defined" in str(error) or "gradient registry has no entry" in str(error):
        return ("no gradient is defined: " + probes.reason(error) + ". Register one with "
                "@tf.RegisterGradient, or mark the op with tf.no_gradient if it has none.")
    wrong_shape = _INCOMPATIBLE_GRADIENT.search(str(error))
    if wrong_shape:
        return _wrong_shape_reason(*wrong_shape.groups(), inputs) or (
            "the gradient computation raised " + probes.reason(error))
    return "the gradient computation raised " + probes.reason(error)


# tf.gradients' own shape check, in a graph: it names the op's input index, not
# ours. Only a tf.custom_gradient's IdentityN has the function's inputs as its own.
_INCOMPATIBLE_GRADIENT = re.compile(r"Forward operation: IdentityN\. Input index: \d+\. "
                                    r"Original input shape: \(([^)]*)\)\. "
                                    r"Calculated input gradient shape: \(([^)]*)\)")


def _wrong_shape_reason(input_shape, gradient_shape, inputs):
    """The wrong-shape message full mode gives, if exactly one input has that shape."""
    shape = tuple(int(side) for side in input_shape.replace(",", " ").split())
    matching = [x for x in inputs if tuple(x.shape) == shape]
    if len(matching) != 1:
        return ""
    gradient = tuple(int(side) for side in gradient_shape.replace(",", " ").split())
    return (f"the gradient for input {matching[0].name!r} has shape {gradient}, but the input "
            f"has shape {shape}")
