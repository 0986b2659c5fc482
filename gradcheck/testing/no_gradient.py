"""`assert_no_gradient`: a test that an op has no gradient, on purpose."""
import numpy as np

from gradcheck import _tf
from gradcheck.errors import GradientCheckError
from gradcheck.execution import modes
from gradcheck.execution import probes as forward
from gradcheck.execution.devices import resolve_devices, short_name
from gradcheck.execution.inputs import normalise_inputs
from gradcheck.execution.outputs import FlatFunction, describe_function, output_specs

_NO_GRADIENT_MARKERS = ("No gradient defined", "gradient registry has no entry")


def assert_no_gradient(fn, inputs, *, modes=None, devices=None):
    """Assert that TensorFlow gives `fn` no gradient with respect to its floating
    inputs: the gradient is None (tf.no_gradient) or no gradient is registered.

    Returns {"<mode> on <device>": "None" | "not registered"}; raises
    GradientCheckError (an AssertionError) naming the modes where a gradient
    exists, or when no mode could run.
    """
    check_inputs = normalise_inputs(fn, inputs)
    wrt = [i for i, x in enumerate(check_inputs) if x.differentiable]
    flat = FlatFunction(fn)
    values = forward.probe(flat, [x.value for x in check_inputs])
    specs = output_specs(flat.output_names, values)
    out_index = [k for k, s in enumerate(specs) if s.differentiable]
    findings, gradients = {}, []
    with _tf.quiet_logs():
        for device in resolve_devices(devices):
            for mode in _modes(modes):
                where = f"{mode} on {short_name(device)}"
                outcome = _gradient_in(mode, flat, check_inputs, wrt, out_index, specs, device)
                if outcome == "a gradient":
                    gradients.append(where)
                elif outcome is not None:
                    findings[where] = outcome
    if gradients:
        raise GradientCheckError(f"{describe_function(fn)} has a gradient in {', '.join(gradients)}, "
                             "but it was expected to have none.")
    if not findings:
        raise GradientCheckError(f"{describe_function(fn)} could not run in any mode, so the absence "
                             "of a gradient was not shown.")
    return findings


def _modes(requested):
    return modes.resolve_modes(requested)


def _gradient_in(mode, flat, check_inputs, wrt, out_index, specs, device):
    """'None', 'not registered', 'a gradient', or None when the mode cannot run."""
    try:
        run = modes.runner(mode, flat, [x.value for x in check_inputs], wrt, out_index, device, 1)
        run.forward()
    except Exception:  # noqa: BLE001  (a mode that cannot run shows nothing either way)
        return None
    cotangents = [np.ones((1, *specs[k].shape), dtype=_tf.numpy_dtype(specs[k].dtype))
                  for k in out_index]
    try:
        run.vjp(cotangents)
    except Exception as error:  # re-raised unless it is the missing gradient we expect
        if any(marker in str(error) for marker in _NO_GRADIENT_MARKERS):
            return "not registered"
        raise
    finally:
        run.close()
    return "None" if len(run.none_inputs) == len(wrt) else "a gradient"
