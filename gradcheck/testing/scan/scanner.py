"""`scan`: every gradient a target defines, checked on inputs the scan finds."""
import dataclasses

from gradcheck.check import check_gradients
from gradcheck.errors import CheckSetupError, OptionError
from gradcheck.execution.failures import NO_GRADIENT_DEFINED
from gradcheck.execution.modes import MODE_NAMES
from gradcheck.testing.property_tests import array_literal
from gradcheck.testing.scan import discover, function_inputs, op_inputs, shrink
from gradcheck.testing.scan.hints import NO_HINT, parse_hints
from gradcheck.testing.scan.results import NO_INPUTS, NOT_DIFFERENTIABLE, RIGHT, WRONG, ScanReport, ScanResult


def scan(target, *, dtypes=None, modes=None, devices=None, examples=3, order=2, strict=False,
         seed=0, hints=None, only=None, on_result=None):
    """Check every gradient `target` defines: a path to a compiled op library
    (.so); an importable module or package (or a .py file): the ops of the op
    libraries it loads, the ops it registers gradients for, its Defuns with
    their own gradient and its public tf.custom_gradient functions; or a list
    of tf.raw_ops op types.

    Each op gets `examples` examples in its most precise float dtype (the
    first at `order` 2, also checking the gradient of the gradient) and one in
    each other float dtype its OpDef and CPU kernels allow. Returns a
    ScanReport; `strict` makes "no valid inputs" a failure. `hints` ({op type:
    {"attrs": ..., "inputs": ..., "shapes": ...}}, docs/scan.md) add to the
    GRADCHECK_SCAN_HINTS of the target's modules. `only` (op types or
    function names) scans those alone. `on_result(k, n, result)` is called as
    each of the n gradients is done (the CLI's progress).
    """
    _require_examples(examples)
    found, given = scan_targets(target, hints)
    chosen = _chosen(found, only)
    results = []
    for op in chosen:
        results.append(scan_op(op, given.get(op.name, NO_HINT), dtypes=dtypes, modes=modes,
                               devices=devices, examples=examples, order=order, seed=seed))
        if on_result is not None:
            on_result(len(results), len(chosen), results[-1])
    return ScanReport(found.name, tuple(results), found.override_only, found.unreachable,
                      strict=strict)


def _chosen(found, only):
    if only is None:
        return found.ops
    names = [only] if isinstance(only, str) else list(only)
    unknown = [n for n in names if n not in {op.name for op in found.ops}]
    if unknown:
        known = ", ".join(op.name for op in found.ops[:12]) or "nothing"
        raise OptionError(f"{found.name} defines no gradient named {', '.join(unknown)}; it "
                          f"defines {known}{' ...' if len(found.ops) > 12 else ''}.")
    return tuple(op for op in found.ops if op.name in names)


def scan_targets(target, hints=None):
    """(the discover.Target, {name: Hint}) of what `scan` would check."""
    found = discover.raw_ops(list(target)) if isinstance(target, (list, tuple)) \
        else discover.find_target(target)
    given = {}
    for module, module_hints in found.hints:
        given.update(parse_hints(module_hints, f"{module}.{discover.MODULE_HINTS}"))
    given.update(parse_hints(hints))
    return found, given


def scan_op(op, hint=NO_HINT, *, dtypes=None, modes=None, devices=None, examples=3, order=2,
            seed=0):
    """The ScanResult of one discover.ScannedGradient (scan's arguments)."""
    _require_examples(examples)
    try:
        calls = _calls(op, hint, dtypes)
    except op_inputs.NoValidInputs as why:
        return ScanResult(op.name, NO_INPUTS, op.origin, str(why), kind=op.kind)
    if isinstance(calls, str):
        return ScanResult(op.name, NOT_DIFFERENTIABLE, op.origin, calls, kind=op.kind)
    return _scan_calls(op, calls, examples, order, seed,
                       {"modes": modes, "devices": devices})


def _calls(op, hint, dtypes):
    """The OpCalls or FunctionCalls to try, or why the op is not differentiable."""
    if op.kind != discover.OP:
        return function_inputs.function_calls(op.name, op.call, dtypes, hint)
    if op.gradient == discover.NO_GRADIENT:
        return "marked tf.no_gradient"
    if op.gradient == discover.MISSING:
        return ("no gradient is registered and the op is not marked tf.no_gradient: "
                "register one with @tf.RegisterGradient, or mark it")
    if not op_inputs.takes_floats(op.name):
        return "integer inputs only"
    return op_inputs.op_calls(op.name, op.call, dtypes, hint)


def _scan_calls(op, calls, examples, order, seed, options):
    checked, reports, unusable = [], [], []
    for rank, call in enumerate(calls):
        try:
            found = op_inputs.examples_of(call, op.call, examples if rank == 0 else 1, seed)
        except op_inputs.NoValidInputs as why:
            unusable.append((call.dtype, str(why)))
            continue
        for number, example in enumerate(found):
            outcome = _check(op, example, order if number == 0 else 1, seed, options)
            if isinstance(outcome, ScanResult):
                return _shrunk(op, outcome, seed, options, checked, reports)
            if isinstance(outcome, tuple):  # (example, why it could not be checked)
                unusable.append(outcome)
            else:
                checked.append(example)
                reports.append(outcome)
    if not checked:
        return ScanResult(op.name, NO_INPUTS, op.origin, _unusable(unusable), kind=op.kind)
    first_order_only = order == 2 and not any(m.order == 2 for r in reports for m in r.modes)
    return ScanResult(op.name, RIGHT, op.origin,
                      "checked on " + ", ".join(_described(e) for e in checked)
                      + ("; order 1 only: its gradient has no gradient" if first_order_only else ""),
                      examples=tuple(checked), reports=tuple(reports), kind=op.kind)


def _shrunk(op, wrong, seed, options, checked, reports):
    """`wrong` with its example shrunk to the smallest that still fails, in the
    modes and at the order that failed."""
    failing = wrong.examples[0]
    report = wrong.report
    narrowed = dict(options, modes=_failing_modes(report) or options.get("modes"))
    order = max(failure.order for failure in (*report.failed_pairs, *report.failed_modes))

    def fails(candidate):  # the same way: a raising gradient does not stand for a wrong one
        outcome = _check(op, candidate, order, seed, narrowed)
        if isinstance(outcome, ScanResult) and _raised(outcome.report) == _raised(report):
            return outcome
        return None

    smallest, smaller_wrong = shrink.shrunk(failing, fails, shrink.worst_element(report))
    reports = (*reports, report)
    if smaller_wrong is not None:
        shapes = _described(failing).split(" ", 1)[-1]
        finding = smaller_wrong.report.failure_message().splitlines()[0]
        wrong = dataclasses.replace(
            smaller_wrong, detail=f"{_described(smallest)} (shrunk from {shapes}): {finding}")
        reports += (smaller_wrong.report,)
    return dataclasses.replace(wrong, examples=(*checked, wrong.examples[0]), reports=reports)


def _raised(report):
    return bool(report.failed_modes) and not report.failed_pairs


def _failing_modes(report):
    """The modes of the failed pairs and of raising modes, and the modes they
    were compared with ('function on CPU:0')."""
    named = {p.mode for p in report.failed_pairs} | {m.mode for m in report.failed_modes}
    named |= {p.against.split(" on ")[0] for p in report.failed_pairs}
    return [mode for mode in MODE_NAMES if mode in named]


def _require_examples(examples):
    if isinstance(examples, bool) or not isinstance(examples, int) or examples < 1:
        raise OptionError(f"examples must be an integer >= 1, got {examples!r}.")


def _check(op, example, order, seed, options):
    """The report if the gradient is right here, (example, reason) if nothing
    could be checked, or the WRONG ScanResult."""
    fn = example.call.fn(op.call)
    check_options = dict(wrt=example.wrt, order=order, seed=seed, raise_on_failure=False,
                         **{k: v for k, v in options.items() if v is not None})
    try:
        report = check_gradients(fn, list(example.inputs), **check_options)
    except CheckSetupError as error:
        return _described(example), str(error).splitlines()[0]
    if order == 2 and _no_second_gradient(report):
        return _check(op, example, 1, seed, options)
    if report.failed_pairs or report.failed_modes:
        return ScanResult(op.name, WRONG, op.origin,
                          f"{_described(example)}: {report.failure_message().splitlines()[0]}",
                          report, _reproduction(op, example, check_options),
                          examples=(example,), kind=op.kind)
    if not report.ok:
        return _described(example), report.failure_message().splitlines()[0]
    return report


def _no_second_gradient(report):
    """Whether the only failure is that the gradient has no gradient of its own
    (a Defun's grad_func, an op gradient built of ops with none): a limit of
    order 2, not a wrong gradient."""
    return (not report.failed_pairs and report.failed_modes
            and all(m.order == 2 and m.reason.startswith(NO_GRADIENT_DEFINED)
                    for m in report.failed_modes))


def _unusable(reasons):
    """'no inputs ran in float64, float32: <why>; ...', one clause per distinct reason."""
    by_reason = {}
    for dtype, why in reasons:
        by_reason.setdefault(why, []).append(dtype)
    return "; ".join(f"no inputs ran in {', '.join(d for d in dtypes if d) or 'any dtype'}: {why}"
                     for why, dtypes in by_reason.items()) + ". Give an input hint (docs/scan.md)."


def _described(example):
    shapes = ", ".join(str(tuple(x.shape)) for x in example.inputs)
    return f"{example.call.dtype} {shapes}".strip()


def _reproduction(op, example, check_options):
    names = example.call.tensor_names
    options = "".join(f", {k}={v!r}" for k, v in check_options.items() if k != "raise_on_failure")
    inputs = f"[{', '.join(array_literal(x) for x in example.inputs)}]"
    if op.kind != discover.OP:
        module, _, function = op.source.rpartition(".")
        return ("Reproduce with:\n"
                f"    from {module} import {function}\n"
                f"    check_gradients({function}, {inputs}{options})")
    keywords, position = [], 0
    for argument in example.call.arguments:
        chunk = names[position:position + argument.count]
        keywords.append(f"{argument.name}=[{', '.join(chunk)}]" if argument.is_list
                        else f"{argument.name}={chunk[0]}")
        position += argument.count
    keywords += [f"{name}={value!r}" for name, value in example.call.attrs]
    return ("Reproduce with:\n"
            f"    check_gradients(lambda {', '.join(names)}: {op.source}({', '.join(keywords)}), "
            f"{inputs}{options})")
