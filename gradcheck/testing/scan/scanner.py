"""`scan`: every gradient a target defines, checked on inputs the scan finds."""
import dataclasses

from gradcheck.check import check_gradients
from gradcheck.errors import CheckSetupError, OptionError
from gradcheck.testing.property_tests import array_literal
from gradcheck.testing.scan import discover, op_inputs
from gradcheck.testing.scan.hints import NO_HINT, parse_hints
from gradcheck.testing.scan.results import NO_INPUTS, NOT_DIFFERENTIABLE, RIGHT, WRONG, ScanReport, ScanResult


def scan(target, *, dtypes=None, modes=None, devices=None, examples=3, order=2, strict=False,
         seed=0, hints=None, on_result=None):
    """Check every gradient `target` defines: a path to a compiled op library
    (.so), an importable module or package (or a .py file) that loads op
    libraries and registers their gradients, or a list of tf.raw_ops op types.

    Each op gets `examples` examples in its most precise float dtype (the
    first at `order` 2, also checking the gradient of the gradient) and one in
    each other float dtype its OpDef and CPU kernels allow. Returns a
    ScanReport; `strict` makes "no valid inputs" a failure. `hints` ({op type:
    {"attrs": ..., "inputs": ..., "shapes": ...}}, docs/scan.md) add to the
    GRADCHECK_SCAN_HINTS of the target's modules. `on_result(k, n,
    result)` is called as each of the n ops is done (the CLI's progress).
    """
    _require_examples(examples)
    found, given = scan_targets(target, hints)
    results = []
    for op in found.ops:
        results.append(scan_op(op, given.get(op.op_type, NO_HINT), dtypes=dtypes, modes=modes,
                               devices=devices, examples=examples, order=order, seed=seed))
        if on_result is not None:
            on_result(len(results), len(found.ops), results[-1])
    return ScanReport(found.name, tuple(results), found.override_only, strict=strict)


def scan_targets(target, hints=None):
    """(the discover.Target, {op type: Hint}) of what `scan` would check."""
    found = discover.raw_ops(list(target)) if isinstance(target, (list, tuple)) \
        else discover.find_target(target)
    given = {}
    for module, module_hints in found.hints:
        given.update(parse_hints(module_hints, f"{module}.{discover.MODULE_HINTS}"))
    given.update(parse_hints(hints))
    return found, given


def scan_op(op, hint=NO_HINT, *, dtypes=None, modes=None, devices=None, examples=3, order=2,
            seed=0):
    """The ScanResult of one discover.ScannedOp (scan's arguments)."""
    _require_examples(examples)
    options = {"modes": modes, "devices": devices}
    if op.gradient == discover.NO_GRADIENT:
        return ScanResult(op.op_type, NOT_DIFFERENTIABLE, op.origin, "marked tf.no_gradient")
    if op.gradient == discover.MISSING:
        return ScanResult(op.op_type, NOT_DIFFERENTIABLE, op.origin,
                          "no gradient is registered and the op is not marked tf.no_gradient: "
                          "register one with @tf.RegisterGradient, or mark it")
    if not op_inputs.takes_floats(op.op_type):
        return ScanResult(op.op_type, NOT_DIFFERENTIABLE, op.origin, "integer inputs only")
    try:
        calls = op_inputs.op_calls(op.op_type, op.call, dtypes, hint)
    except op_inputs.NoValidInputs as why:
        return ScanResult(op.op_type, NO_INPUTS, op.origin, str(why))
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
                return dataclasses.replace(outcome, examples=(*checked, example),
                                           reports=(*reports, outcome.report))
            if isinstance(outcome, tuple):  # (example, why it could not be checked)
                unusable.append(outcome)
            else:
                checked.append(example)
                reports.append(outcome)
    if not checked:
        return ScanResult(op.op_type, NO_INPUTS, op.origin, _unusable(unusable))
    return ScanResult(op.op_type, RIGHT, op.origin,
                      "checked on " + ", ".join(_described(e) for e in checked),
                      examples=tuple(checked), reports=tuple(reports))


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
    if report.failed_pairs or report.failed_modes:
        return ScanResult(op.op_type, WRONG, op.origin,
                          f"{_described(example)}: {report.failure_message().splitlines()[0]}",
                          report, _reproduction(op, example, check_options))
    if not report.ok:
        return _described(example), report.failure_message().splitlines()[0]
    return report


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
    keywords, position = [], 0
    for argument in example.call.arguments:
        chunk = names[position:position + argument.count]
        keywords.append(f"{argument.name}=[{', '.join(chunk)}]" if argument.is_list
                        else f"{argument.name}={chunk[0]}")
        position += argument.count
    keywords += [f"{name}={value!r}" for name, value in example.call.attrs]
    options = "".join(f", {k}={v!r}" for k, v in check_options.items() if k != "raise_on_failure")
    return ("Reproduce with:\n"
            f"    check_gradients(lambda {', '.join(names)}: {op.source}({', '.join(keywords)}), "
            f"[{', '.join(array_literal(x) for x in example.inputs)}]{options})")
