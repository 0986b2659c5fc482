"""The forward pass before any gradient: does it run, is it finite, is it
deterministic, and in which precision can the reference be computed."""
import re

import numpy as np

from gradcheck import _tf
from gradcheck.errors import CheckSetupError
from gradcheck.execution.devices import CPU
from gradcheck.execution.traces import traced_forward
from gradcheck.numerics import layout

# Largest dense Jacobian (real components, out x in) held in full mode.
MAX_JACOBIAN_ENTRIES = 1 << 24

_WIDE = {"float16": "float64", "bfloat16": "float64", "float32": "float64", "float64": "float64",
         "complex64": "complex128", "complex128": "complex128"}


# TensorFlow's DT_ names that differ from the dtype names users write.
_DTYPE_NAMES = {"half": "float16", "float": "float32", "double": "float64"}


# The ops of tf.py_function and tf.numpy_function, as XLA names them when it refuses them.
_PY_FUNCTION_OPS = re.compile(r"\b(EagerPyFunc|PyFunc|PyFuncStateless)\b")


def probe(target, values):
    """The function's outputs at the inputs, from tf.function or else eagerly."""
    tf = _tf.tf()
    errors = {}
    for runs_as_function in (True, False):
        try:
            call = traced(target) if runs_as_function else (lambda *xs: target(list(xs)))
            with tf.device(CPU):
                outputs = call(*[tf.constant(v) for v in values])
        except CheckSetupError:
            raise
        except Exception as error:  # noqa: BLE001  (reported to the user with the reason)
            errors["tf.function" if runs_as_function else "eagerly"] = reason(error)
            continue
        # Outside the try: an error reading the outputs is gradcheck's, not the function's.
        return [_tf.to_numpy(y) for y in outputs]
    if len(set(errors.values())) == 1:
        raise CheckSetupError("the function raised when called on the inputs: "
                              + next(iter(errors.values())))
    raise CheckSetupError("the function raised when called on the inputs, "
                          + "; ".join(f"{how}: {text}" for how, text in errors.items()))


def traced(target):
    """The target as one tf.function on the CPU, cached on the target: the
    same trace as function mode's forward pass there."""
    return traced_forward(target, "function", CPU)


def require_eager_execution(caller):
    """Refuse, before touching any graph, to run where ops would be added to the
    caller's graph instead of running."""
    tf = _tf.tf()
    if tf.executing_eagerly():
        return
    if tf.inside_function():
        where = "inside a tf.function"
    elif _tf.eager_by_default():
        where = "inside a `with tf.Graph().as_default():` block"
    else:
        where = "after tf.compat.v1.disable_eager_execution()"
    raise CheckSetupError(
        f"{caller} was called {where}, where TensorFlow builds a graph instead of running "
        "ops. It builds the graphs and functions it needs itself: call it from plain Python "
        "code, outside any graph or tf.function (and with eager execution on). Nothing was "
        "added to your graph.")


def require_finite(values, specs, out_index):
    for k in out_index:
        bad = ~np.isfinite(values[k])
        if bad.any():
            first = int(np.flatnonzero(bad)[0])
            where = layout.component_label(specs[k].name, specs[k].shape, False, first)
            raise CheckSetupError(
                f"the forward pass is not finite at {where} (value {values[k].reshape(-1)[first]}) "
                f"for these inputs, in {int(bad.sum())} element(s): gradients cannot be checked "
                "there. Choose inputs inside the function's domain."
            )


def require_deterministic(target, native, values, specs):
    again = probe(target, native)
    for spec, first, second in zip(specs, values, again):
        if not _same(first, second):
            raise CheckSetupError(
                f"the forward pass is not deterministic: two calls with the same inputs gave "
                f"different values of {spec.name}. Finite differences need a deterministic "
                "function: fix the seed of random ops (tf.random.stateless_*) or move "
                "randomness out of the function."
            )


def require_stateless(target, arguments, variables):
    """Two plain calls (the variables left as the function leaves them) must
    agree: a function that updates a variable it reads (an assign_add inside it)
    is not one function of its inputs, and finite differences would chase it."""
    first, second = probe(target, arguments), probe(target, arguments)
    for name, a, b in zip(target.output_names, first, second):
        if not _same(a, b):
            raise CheckSetupError(
                f"the function changes its own state: two calls with the same inputs gave "
                f"different values of {name}. It reads the variable(s) "
                f"{', '.join(x.name for x in variables)}; if it also updates them (assign, "
                "assign_add, an optimizer step), move the update out of the function.")


def require_unchanged(before, variables):
    """The first call must leave the variables it reads as it found them: one
    that assigns even the same value each call (w.assign(3.0)) ignores the
    values finite differences give it, so its gradient would look wrong."""
    changed = {id(v) for v in before.changed([x.variable for x in variables])}
    if changed:
        names = ", ".join(x.name for x in variables if id(x.variable) in changed)
        raise CheckSetupError(
            f"the function changes its own state: one call with the inputs changed the "
            f"value of the variable(s) {names}, which it reads. If it updates them (assign, "
            "assign_add, an optimizer step), move the update out of the function.")


def _same(first, second):
    """Equal values, NaN equal to NaN; string outputs (objects) have no NaN to compare."""
    return np.array_equal(first, second, equal_nan=first.dtype.kind in "fc")


def require_jacobian_fits(rows, columns):
    """Refuse a full Jacobian of rows x columns real entries that full mode cannot hold
    (before the first forward pass, rows=1 stands for the fewest outputs there can be)."""
    if rows * columns > MAX_JACOBIAN_ENTRIES:
        raise CheckSetupError(
            f"the full Jacobian has {'at least ' if rows == 1 else ''}{rows} x {columns} real "
            "entries, more than full mode "
            f"holds ({MAX_JACOBIAN_ENTRIES}): use method='fast' (random projections; "
            "method='auto' picks it for large checks), check smaller inputs, or reduce the "
            "outputs (a sum of the outputs, say)."
        )


def reference_inputs(target, check_inputs, native_outputs):
    """(input values for the finite differences, their precision, the outputs
    there): float64 if the function takes them, else the inputs as given, whose
    outputs the caller already has (`native_outputs`)."""
    wide = [x.value.astype(_tf.numpy_dtype(_WIDE[x.dtype])) if x.differentiable else x.value
            for x in check_inputs]
    if all(w.dtype == x.value.dtype for w, x in zip(wide, check_inputs)):
        outputs = native_outputs  # the inputs are float64 already
    else:
        try:
            outputs = probe(target, wide)
        except CheckSetupError:
            outputs = None
    floating = [o for o in outputs or [] if o.dtype.kind in "fc"]
    if outputs is not None and all(o.dtype in (np.float64, np.complex128) for o in floating) \
            and all(np.isfinite(o).all() for o in floating):
        if computes_in_float32(target, wide, check_inputs, floating):
            return wide, ("float64 inputs, but the function computes in float32 inside: "
                          "steps and tolerances for float32"), outputs, "float32"
        return wide, "float64", outputs, "float64"
    dtypes = sorted({x.dtype for x in check_inputs if x.differentiable})
    native = [x.value for x in check_inputs]
    return native, (
        f"{'/'.join(dtypes)} (the function does not take float64 inputs; "
        "Richardson extrapolation in the input precision)"), native_outputs, None


def computes_in_float32(target, wide, check_inputs, floating_outputs):
    """Whether a function that returns float64 casts its inputs to float32 inside
    (tf.image does): almost none of its outputs move when every input moves by a
    relative 1e-12, though they do when it moves by 1e-4. ("Almost": a nudge can
    cross a float32 rounding boundary; docs/verdict.md has the rates.)"""
    def outputs_moved(relative):
        nudged = [v * (1 + relative) + relative if x.differentiable else v
                  for v, x in zip(wide, check_inputs)]
        after = [o for o in probe(target, nudged) if o.dtype.kind in "fc"]
        return sum(int(np.count_nonzero(a != b)) for a, b in zip(floating_outputs, after))

    try:
        moved_by_tiny = outputs_moved(1e-12)
        if moved_by_tiny > 0.01 * sum(o.size for o in floating_outputs):
            return False  # most functions: no second call needed
        moved_by_large = outputs_moved(1e-4)
        return moved_by_large > 0 and moved_by_tiny <= 0.01 * moved_by_large
    except CheckSetupError:
        return False


_MISSING_KERNEL = re.compile(r"(?:No OpKernel was registered to support Op '(\w+)'.*?T=DT_(\w+)"
                             r"|Could not find device for node: \{\{node (\w+)\}\} = \w+\[T=DT_(\w+))")


_EAGER_CAPTURE = "Attempting to capture an EagerTensor without building a function"


def reason(error):
    """A one-line account of an exception, TensorFlow's traceback noise removed."""
    missing = _MISSING_KERNEL.search(str(error))
    if missing:
        op = missing.group(1) or missing.group(3)
        dtype = (missing.group(2) or missing.group(4)).lower()
        return (f"TensorFlow has no kernel for {op} with dtype {_DTYPE_NAMES.get(dtype, dtype)} "
                "here; check a dtype it supports (gradcheck.strategies.dtypes(fn=...) draws only "
                "those)")
    if _PY_FUNCTION_OPS.search(str(error)) and "unsupported operations" in str(error):
        return ("it calls tf.py_function or tf.numpy_function, whose Python code XLA cannot "
                "compile; leave 'xla' out of modes")
    if _EAGER_CAPTURE in str(error):
        return ("it uses a tensor or tf.Variable created eagerly, which a tf.compat.v1 graph "
                "cannot capture; to check graph mode, create it inside the function or pass it "
                "as an input")
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
