"""`check_gradients`: the one call that compares TensorFlow's gradients with
finite differences (or a declared gradient), in every mode and on every device
asked for."""
from gradcheck import _tf, progress_bar
from gradcheck.errors import CheckSetupError, GradientCheckError, OptionError
from gradcheck.execution import evaluator, probes, sources
from gradcheck.execution.devices import CPU
from gradcheck.execution.inputs import (
    captured_variables,
    normalise_inputs,
    real_components,
    require_finite_inputs,
)
from gradcheck.execution.outputs import flat_function, function_name, output_specs
from gradcheck.execution.problem import Problem, ReferencePoint
from gradcheck.execution.snapshot import kept_variables
from gradcheck.execution.targets import gradient_targets, only_where_honoured
from gradcheck.methods import projections
from gradcheck.methods.declared_none import check_declared_none
from gradcheck.methods.fast import check_by_projections
from gradcheck.methods.full import check_in_full
from gradcheck.numerics import footprint, memory
from gradcheck.numerics.compare import Tolerances
from gradcheck.options import selected_positions, validated_options
from gradcheck.report import Findings

# method="auto" checks the full Jacobian up to this many real entries, else projections.
AUTO_FULL_LIMIT = 1 << 20
BATCH_BUDGET_BYTES = 64 << 20


@memory.ordinary_pages()
def check_gradients(fn, inputs, *, modes=None, devices=None, method="auto", order=1,
                    atol=None, rtol=None, eps=None, seed=0, raise_on_failure=True,
                    reference=None, override_map=None, forward_mode=False, strict=False,
                    wrt=None, no_gradient_for=None):
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
    wrt: the inputs to differentiate: names or argument indices, e.g. ["x"] or
        [0] (default: every floating and complex input). The others are passed
        through, as integer inputs are.
    no_gradient_for: inputs whose gradient is meant to be None, such as the
        order n of tf.math.polygamma(n, x): names or argument indices. They are
        not differentiated; instead, in every mode checked, the gradient with
        respect to them must be None (zeros fail too).
    """
    probes.require_eager_execution("check_gradients")
    options = validated_options(
        fn, modes=modes, devices=devices, method=method, order=order, atol=atol, rtol=rtol,
        eps=eps, seed=seed, raise_on_failure=raise_on_failure, reference=reference,
        override_map=override_map, forward_mode=forward_mode, strict=strict, wrt=wrt,
        no_gradient_for=no_gradient_for)
    _require_room(real_components(inputs), options.method)
    arguments = normalise_inputs(fn, inputs)
    require_finite_inputs(arguments)
    # Every variable the function touches is put back, however the check ends.
    with kept_variables(fn, arguments) as before, progress_bar.showing(function_name(fn)):
        return _check(fn, arguments, options, before)


def _check(fn, arguments, options, before):
    check_inputs, variables = _with_variables(fn, arguments, before)
    n_arguments = len(check_inputs) - len(variables)
    none = _declared_none(check_inputs, n_arguments, options)
    wrt = _differentiated_inputs(check_inputs, n_arguments, options, none)
    findings = Findings()
    for note in options.notes:
        findings.note(note)
    base = _differentiated(fn, n_arguments, variables, options, findings)
    source, gradients_used = sources.describe_source(
        fn, base, [x.value for x in check_inputs], options.override_map)
    unused = sources.unused_overrides(base, [x.value for x in check_inputs], options.override_map)
    if unused:
        findings.note(f"override_map names {', '.join(map(repr, unused))}, an op type the "
                      "function never creates: the map changes nothing there. Check the "
                      "spelling against the op types in the function's graph.")
    target_for = only_where_honoured(lambda mode: base, options.override_map)
    with _tf.quiet_logs():
        if variables:
            probes.require_stateless(flat_function(fn),
                                     [x.value for x in check_inputs[:n_arguments]], variables)
        for current in range(1, options.order + 1):
            problem, point, chosen = _pose(current, target_for, check_inputs, wrt, options)
            if current == 1:
                first = {"method": chosen, "reference_precision": point.precision}
                _note_integer_inputs(check_inputs, wrt, none, findings)
                _note_other_outputs(problem, findings)
            if chosen == "fast":
                check_by_projections(problem, options, target_for, point, findings)
            else:
                check_in_full(problem, options, target_for, point, findings,
                              options.reference if current == 1 else None)
            if current == 1 and none:
                check_declared_none(problem, options, target_for, none, findings)
            if current < options.order:
                target_for = only_where_honoured(gradient_targets(base, problem, options.rng),
                                                 options.override_map)
    report = findings.report(function=function_name(fn), inputs=[x.describe() for x in check_inputs],
                             seed=options.seed, strict=options.strict, eps=options.eps,
                             source=source, unused_overrides=unused,
                             gradients_used=gradients_used, **first)
    if options.raise_on_failure and not report.ok:
        raise GradientCheckError(report)
    return report


# AutoGraph's mark for "call as is": inside a tf.function the refusal below then
# reaches the user as itself, not as a StagingError from converting this module.
check_gradients.autograph_info__ = frozenset()


def _require_room(columns, method):
    """Refuse a check that cannot fit, before its first forward pass."""
    if method == "full":
        probes.require_jacobian_fits(1, columns)
    footprint.require_fits(columns)


def _with_variables(fn, arguments, before):
    """(the CheckInputs: the arguments, then the variables `fn` reads; those variables)."""
    with _tf.quiet_logs():
        variables = captured_variables(fn, arguments)
    # Found by a call, not a trace: their values from before it are lost.
    before.add([x.variable for x in variables])
    probes.require_unchanged(before, variables)
    check_inputs = tuple(arguments) + tuple(variables)
    if not any(x.differentiable for x in check_inputs):
        raise CheckSetupError(
            "none of the inputs is floating-point or complex ("
            + ", ".join(x.describe() for x in check_inputs)
            + "), so there is no gradient to check. Pass float inputs as float arrays."
        )
    return check_inputs, variables


def _declared_none(check_inputs, n_arguments, options):
    """The positions of the inputs no_gradient_for= names, refused if integer."""
    chosen = selected_positions("no_gradient_for", options.no_gradient_for, check_inputs,
                                n_arguments)
    integer = [check_inputs[i].describe() for i in chosen if not check_inputs[i].differentiable]
    if integer:
        raise OptionError(f"no_gradient_for= names {', '.join(integer)}, an integer or bool "
                          "input: those never get a gradient, so there is nothing to declare. "
                          "Leave it out of no_gradient_for=.")
    return chosen


def _differentiated_inputs(check_inputs, n_arguments, options, none):
    """The positions of the inputs the check differentiates: those `wrt=` names,
    else every floating and complex one not declared to get no gradient."""
    if options.wrt is None:
        chosen = tuple(i for i, x in enumerate(check_inputs)
                       if x.differentiable and i not in none)
        if not chosen:
            raise OptionError("no_gradient_for= names every floating input, so no gradient is "
                              "left to check against finite differences. Use assert_no_gradient "
                              "to show that a function has no gradient at all.")
        return chosen
    if not options.wrt:
        raise OptionError("wrt=[] names no input, so there is nothing to check; name the inputs "
                          "to differentiate, or leave wrt out for every floating input.")
    chosen = selected_positions("wrt", options.wrt, check_inputs, n_arguments)
    both = [check_inputs[i].name for i in chosen if i in none]
    if both:
        raise OptionError(f"{', '.join(map(repr, both))} is named by both wrt= and "
                          "no_gradient_for=: an input is either checked against finite "
                          "differences or declared to get no gradient. Name it in one of them.")
    integer = [check_inputs[i].describe() for i in chosen if not check_inputs[i].differentiable]
    if integer:
        raise OptionError(f"wrt= names {', '.join(integer)}, which is not floating-point or "
                          "complex and has no gradient to check; leave it out of wrt=.")
    return chosen


def _differentiated(fn, n_arguments, variables, options, findings):
    """The target every mode differentiates: `fn` on flat tensors, with the
    variables it reads as inputs of their own, under the override map."""
    target = flat_function(fn)
    if variables:
        target = sources.VariableTarget(target, n_arguments, variables)
        findings.note("the function reads the variable(s) " + ", ".join(
            x.describe() for x in variables) + "; their gradients are checked too.")
    return sources.OverriddenTarget(target, options.override_map) if options.override_map else target


def _pose(order, target_for, check_inputs, wrt, options):
    """(the order's Problem, the ReferencePoint, the method chosen for it)."""
    native = [x.value for x in check_inputs]
    target = target_for(options.reference_mode)
    values = probes.probe(target, native)
    specs = tuple(output_specs(target.output_names, values))
    out_index = tuple(k for k, s in enumerate(specs) if s.differentiable)
    if not out_index:
        raise CheckSetupError(
            "no output of the function is floating-point or complex ("
            + ", ".join(f"{s.name}: {s.dtype}" for s in specs) + "); nothing to differentiate."
        )
    diff_specs = [specs[k] for k in out_index]
    probes.require_finite(values, specs, out_index)
    probes.require_deterministic(target, native, values, specs)
    rows = sum(s.real_size for s in diff_specs)
    columns = sum(check_inputs[i].real_size for i in wrt)
    method = _method_for(options, rows, columns)
    if method == "full":
        probes.require_jacobian_fits(rows, columns)
    wide, precision, at_inputs, computed_in = probes.reference_inputs(target, check_inputs, values)
    evaluate = evaluator.batched_evaluator(target, wide, out_index, CPU,
                                           [x.name for x in check_inputs], diff_specs)
    batch = (projections.projection_count(rows, columns) if method == "fast"
             else _batch_size(check_inputs, rows))
    problem = Problem(order, check_inputs, wrt, specs, out_index,
                      Tolerances(options.atol, options.rtol, computed_in), batch)
    point = ReferencePoint(wide, [at_inputs[k] for k in out_index], precision, evaluate)
    return problem, point, method


def _method_for(options, rows, columns):
    if options.method != "auto":
        return options.method
    if rows * columns <= AUTO_FULL_LIMIT:
        return "full"
    if options.forward_mode:
        raise OptionError(
            f"forward_mode=True compares whole Jacobians, and this one has {rows * columns:,} "
            f"entries, so method='auto' would check it by projections (fast mode), which build "
            "none. Pass method='full' to build it anyway, or leave forward_mode off.")
    return "fast"


def _batch_size(check_inputs, rows):
    """Jacobian rows per batch of VJPs, within BATCH_BUDGET_BYTES."""
    per_row = 8 * (sum(x.real_size for x in check_inputs) + rows) * 4
    return int(max(1, min(rows, BATCH_BUDGET_BYTES // max(per_row, 1), 4096)))


def _note_other_outputs(problem, findings):
    for k, spec in enumerate(problem.specs):
        if k not in problem.out_index:
            findings.note(f"{spec.name} ({spec.dtype}) is not floating-point or complex: it "
                          "has no gradient, so it was left out of the check.")


def _note_integer_inputs(check_inputs, wrt, none, findings):
    for i, x in enumerate(check_inputs):
        if i in wrt:
            continue
        if i in none:
            findings.note(f"{x.name} ({x.dtype}) is declared by no_gradient_for= to get no "
                          "gradient: it was not differentiated, and its gradient was checked "
                          "to be None in every mode.")
        elif x.differentiable:
            findings.note(f"{x.name} ({x.dtype}) is not in wrt=, so it was passed through as "
                          "is: neither differentiated nor checked.")
        else:
            findings.note(f"{x.name} ({x.dtype}) is not differentiable and gets no "
                          "gradient, as TensorFlow expects for integer and bool inputs.")
