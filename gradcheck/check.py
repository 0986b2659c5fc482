"""`check_gradients`: the one call that compares TensorFlow's gradients with
finite differences, in every mode and on every device asked for."""
import numpy as np

from gradcheck import _tf, analytic, compare, layout, numeric
from gradcheck import modes as execution_modes
from gradcheck.devices import CPU, resolve_devices, short_name
from gradcheck.errors import CheckSetupError, GradientCheckError
from gradcheck.inputs import normalise_inputs
from gradcheck.outputs import FlatFunction, describe_function, output_specs
from gradcheck.report import FINITE_DIFFERENCES, GradientReport, ModeResult, PairResult

METHODS = ("auto", "full")
# Largest dense Jacobian (real components, out x in) held in full mode.
MAX_JACOBIAN_ENTRIES = 1 << 25
BATCH_BUDGET_BYTES = 64 << 20


def check_gradients(fn, inputs, *, modes=None, devices=None, method="auto", order=1,
                    atol=None, rtol=None, eps=None, seed=0, raise_on_failure=True):
    """Check that the gradients TensorFlow uses for `fn` match finite differences.

    fn: takes one tensor per element of `inputs`, returns a tensor or a nest of them.
    inputs: numpy arrays, eager tensors or Python numbers. Floating and complex
        inputs are differentiated; integer and bool inputs are passed through.
    modes: some of "eager", "function", "graph", "xla" (default: all). A mode
        the function cannot run in is reported as skipped, with the reason.
    devices: TensorFlow device names (default: the CPU).
    method: "auto" or "full" (the full Jacobian).
    order: 1, or 2 to also check the gradient of the gradient.
    atol, rtol: override the per-dtype tolerances (a number, or a dict from
        dtype name to number).
    eps: relative finite-difference step (default: chosen per element).
    seed: seeds the cotangents, so a report can be reproduced.
    raise_on_failure: raise GradientCheckError on a mismatch (else return the
        report with report.ok False).
    """
    method = _validate_options(method, order, eps)
    check_inputs = normalise_inputs(fn, inputs)
    wrt = [i for i, x in enumerate(check_inputs) if x.differentiable]
    if not wrt:
        raise CheckSetupError(
            "none of the inputs is floating-point or complex ("
            + ", ".join(x.describe() for x in check_inputs)
            + "), so there is no gradient to check. Pass float inputs as float arrays."
        )
    report = GradientReport(
        function=describe_function(fn).replace("the function ", ""),
        inputs=[x.describe() for x in check_inputs], method=method, seed=seed,
    )
    settings = _Settings(resolve_devices(devices), execution_modes.resolve_modes(modes),
                         atol, rtol, eps, np.random.default_rng(seed))
    first = FlatFunction(fn)

    def target_for(mode):
        return first  # the same function in every mode

    with _tf.quiet_logs():
        for current in range(1, order + 1):
            checked = _check_order(current, target_for, check_inputs, wrt, settings, report)
            target_for = _second_order_targets(first, checked, wrt, check_inputs, settings)
    if raise_on_failure and not report.ok:
        raise GradientCheckError(report)
    return report


class _Settings:
    def __init__(self, devices, mode_names, atol, rtol, eps, rng):
        self.devices = devices
        self.modes = mode_names
        self.atol = atol
        self.rtol = rtol
        self.eps = eps
        self.rng = rng


def _validate_options(method, order, eps):
    if method == "fast":
        raise ValueError("method='fast' (random projections) is not available yet; use 'full'.")
    if method not in METHODS:
        raise ValueError(f"unknown method {method!r}; choose from {', '.join(METHODS)}.")
    if order not in (1, 2):
        raise ValueError(f"order must be 1 or 2, got {order!r}.")
    if eps is not None and not (isinstance(eps, (int, float)) and 0 < eps < 1):
        raise ValueError(f"eps is a relative step and must lie in (0, 1), got {eps!r}.")
    return "full"


class _Checked:
    """What one order's check learnt that the next order needs."""

    def __init__(self, specs, out_index):
        self.specs = specs
        self.out_index = out_index


def _check_order(order, target_for, check_inputs, wrt, settings, report):
    native = [x.value for x in check_inputs]
    target = target_for("function")
    values = _probe(target, native)
    names = target.output_names
    specs = output_specs(names, values)
    out_index = [k for k, s in enumerate(specs) if s.differentiable]
    if not out_index:
        raise CheckSetupError(
            "no output of the function is floating-point or complex ("
            + ", ".join(f"{s.name}: {s.dtype}" for s in specs) + "); nothing to differentiate."
        )
    diff_specs = [specs[k] for k in out_index]
    _require_finite(values, specs, out_index)
    _require_deterministic(target, native, values, specs)
    _require_jacobian_fits(check_inputs, wrt, diff_specs)
    for i, x in enumerate(check_inputs):
        if i not in wrt and order == 1:
            report.notes.append(f"{x.name} ({x.dtype}) is not differentiable and gets no "
                                "gradient, as TensorFlow expects for integer and bool inputs.")

    reference, precision = _reference_inputs(target, check_inputs)
    if order == 1:
        report.reference_precision = precision
    evaluate = numeric.batched_evaluator(target, reference, out_index, CPU)
    expected, _ = numeric.numeric_jacobian(evaluate, reference, wrt, diff_specs, settings.eps)

    scales = analytic.row_scales(sum(s.real_size for s in diff_specs), settings.rng)
    batch = _batch_size(check_inputs, diff_specs)
    baseline = None
    for device in settings.devices:
        for mode in settings.modes:
            where = (short_name(device), mode, order)
            blocks = _run_mode(mode, target_for(mode), check_inputs, wrt, out_index, diff_specs,
                               device, scales, batch, where, report)
            if blocks is None:
                continue
            _compare_all(blocks, expected, FINITE_DIFFERENCES, check_inputs, wrt, diff_specs,
                         where, settings, report)
            if baseline is None:
                baseline = (blocks, f"{mode} on {short_name(device)}")
            else:
                _compare_all(blocks, baseline[0], baseline[1], check_inputs, wrt, diff_specs,
                             where, settings, report)
    return _Checked(specs, out_index)


def _run_mode(mode, target, check_inputs, wrt, out_index, diff_specs, device, scales, batch,
              where, report):
    """The analytic Jacobian in one mode and device, or None if it could not run."""
    device_name, mode_name, order = where
    native = [x.value for x in check_inputs]
    try:
        run = execution_modes.runner(mode, target, native, wrt, out_index, device, batch)
        run.forward()
    except CheckSetupError:
        raise
    except Exception as error:  # noqa: BLE001  (any failure of the forward pass: skip the mode)
        report.modes.append(ModeResult(device_name, mode_name, order, "skipped",
                                       "the forward pass cannot run here: " + _reason(error)))
        return None
    try:
        blocks = analytic.analytic_jacobian(run, check_inputs, wrt, diff_specs, scales, batch)
    except analytic.GradientShapeError as error:
        report.modes.append(ModeResult(device_name, mode_name, order, "failed", str(error)))
        return None
    except CheckSetupError:
        raise
    except Exception as error:  # noqa: BLE001  (whatever the gradient raised is the finding)
        status = "skipped" if _is_unsupported(error) else "failed"
        report.modes.append(ModeResult(device_name, mode_name, order, status, _gradient_reason(error)))
        return None
    finally:
        run.close()
    report.modes.append(ModeResult(device_name, mode_name, order, "checked"))
    _note_gradient_structure(run, check_inputs, wrt, where, report)
    return blocks


def _note_gradient_structure(run, check_inputs, wrt, where, report):
    device_name, mode_name, order = where
    for position in sorted(run.none_inputs):
        report.notes.append(f"{mode_name} mode on {device_name}: the gradient with respect to "
                            f"{check_inputs[wrt[position]].name} is None (not connected); "
                            "it was compared as zeros.")
    for i in getattr(run, "integer_inputs_with_gradient", []):
        report.modes.append(ModeResult(
            device_name, mode_name, order, "failed",
            f"{check_inputs[i].name} is {check_inputs[i].dtype} but tf.gradients returned a "
            "gradient for it; a gradient function should return None for integer inputs."))


def _compare_all(actual, expected, against, check_inputs, wrt, diff_specs, where, settings, report):
    device_name, mode_name, order = where
    for i in wrt:
        x = check_inputs[i]
        atol, rtol = compare.tolerance_for(x.dtype, settings.atol, settings.rtol)
        for k, spec in enumerate(diff_specs):
            result = compare.compare_block(actual[(k, i)], expected[(k, i)], atol, rtol)
            row, col = result.worst if result.worst else (0, 0)
            report.pairs.append(PairResult(
                device=device_name, mode=mode_name, order=order, output=spec.name,
                input=x.name, against=against, dtype=x.dtype, output_shape=spec.shape,
                input_shape=x.shape, atol=atol, rtol=rtol, n_total=result.n_total,
                n_failed=result.n_failed, n_unreliable=result.n_unreliable,
                max_abs_error=result.max_abs_error, max_rel_error=result.max_rel_error,
                worst_output=layout.component_label(spec.name, spec.shape, spec.is_complex, row),
                worst_input=layout.component_label(x.name, x.shape, x.is_complex, col),
                worst_actual=result.worst_actual, worst_expected=result.worst_expected,
            ))


def _probe(target, values):
    """The function's outputs at the inputs, from tf.function or else eagerly."""
    tf = _tf.tf()
    errors = []
    for runs_as_function in (True, False):
        try:
            call = tf.function(lambda *xs: target(list(xs)), autograph=False) if runs_as_function \
                else (lambda *xs: target(list(xs)))
            with tf.device(CPU):
                return [np.asarray(y.numpy()) for y in call(*[tf.constant(v) for v in values])]
        except CheckSetupError:
            raise
        except Exception as error:  # noqa: BLE001  (reported to the user with the reason)
            errors.append(("tf.function" if runs_as_function else "eagerly") + ": " + _reason(error))
    raise CheckSetupError("the function raised when called on the inputs, "
                          + "; ".join(errors))


def _require_finite(values, specs, out_index):
    for k in out_index:
        bad = ~np.isfinite(values[k].astype(np.complex128))
        if bad.any():
            first = int(np.flatnonzero(bad)[0])
            where = layout.component_label(specs[k].name, specs[k].shape, False, first)
            raise CheckSetupError(
                f"the forward pass is not finite at {where} (value {values[k].reshape(-1)[first]}) "
                f"for these inputs, in {int(bad.sum())} element(s): gradients cannot be checked "
                "there. Choose inputs inside the function's domain."
            )


def _require_deterministic(target, native, values, specs):
    again = _probe(target, native)
    for spec, first, second in zip(specs, values, again):
        if not np.array_equal(first, second, equal_nan=True):
            raise CheckSetupError(
                f"the forward pass is not deterministic: two calls with the same inputs gave "
                f"different values of {spec.name}. Finite differences need a deterministic "
                "function: fix the seed of random ops (tf.random.stateless_*) or move "
                "randomness out of the function."
            )


def _require_jacobian_fits(check_inputs, wrt, diff_specs):
    rows = sum(s.real_size for s in diff_specs)
    columns = sum(check_inputs[i].real_size for i in wrt)
    if rows * columns > MAX_JACOBIAN_ENTRIES:
        raise CheckSetupError(
            f"the full Jacobian has {rows} x {columns} real entries, more than full mode "
            f"holds ({MAX_JACOBIAN_ENTRIES}); check smaller inputs or reduce the outputs "
            "(a sum of the outputs, say)."
        )


_WIDE = {"float16": "float64", "bfloat16": "float64", "float32": "float64", "float64": "float64",
         "complex64": "complex128", "complex128": "complex128"}


def _reference_inputs(target, check_inputs):
    """Input values for the finite differences: float64 if the function takes them."""
    wide = [x.value.astype(_tf.numpy_dtype(_WIDE[x.dtype])) if x.differentiable else x.value
            for x in check_inputs]
    try:
        outputs = _probe(target, wide)
    except CheckSetupError:
        outputs = None
    if outputs is not None and all(o.dtype in (np.float64, np.complex128) for o in outputs
                                   if o.dtype.kind in "fc") and \
            all(np.isfinite(o.astype(np.complex128)).all() for o in outputs if o.dtype.kind in "fc"):
        return wide, "float64"
    dtypes = sorted({x.dtype for x in check_inputs if x.differentiable})
    return [x.value for x in check_inputs], (
        f"{'/'.join(dtypes)} (the function does not take float64 inputs; "
        "Richardson extrapolation in the input precision)")


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

    def __call__(self, tensors):
        tf = _tf.tf()
        return execution_modes.vjp_inline(self.mode, self.first, tensors, self.wrt, self.out_index,
                                [tf.constant(c) for c in self.cotangents])


def _random_cotangent(spec, rng):
    real = rng.uniform(0.5, 1.5, size=spec.real_size) * rng.choice([-1.0, 1.0], size=spec.real_size)
    return layout.from_real_view(real[None], np.complex128 if spec.is_complex else np.float64,
                                 spec.shape)[0]


def _reason(error):
    lines = [line.strip() for line in str(error).strip().splitlines() if line.strip()]
    if lines and lines[0].startswith("in user code"):
        # An error raised while tracing: its own message is the last line,
        # after the traceback of the traced code.
        lines = lines[-1:]
    text = " ".join(lines[:2]) if lines else ""
    if len(text) > 400:
        text = text[:400] + " ..."
    if text.split(":")[0].endswith(("Error", "Exception")):
        return text
    return f"{type(error).__name__}: {text}"


_UNSUPPORTED_MARKERS = ("unsupported operations", "No registered", "Cannot assign a device",
                        "Could not satisfy explicit device", "not supported on XLA")


def _is_unsupported(error):
    return any(marker in str(error) for marker in _UNSUPPORTED_MARKERS)


def _gradient_reason(error):
    if "No gradient defined" in str(error):
        return ("no gradient is defined: " + _reason(error) + ". Register one with "
                "@tf.RegisterGradient, or mark the op with tf.no_gradient if it has none.")
    return "the gradient computation raised " + _reason(error)
