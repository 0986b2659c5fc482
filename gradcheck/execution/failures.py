"""What TensorFlow's errors mean for a check: a mode that cannot run here, or
a gradient that raised, in words the user can act on."""
import re

from gradcheck.execution import probes

_UNSUPPORTED_MARKERS = ("unsupported operations", "No registered", "Cannot assign a device",
                        "Could not satisfy explicit device", "not supported on XLA")

# tf.gradients' own shape check, in a graph: it names the op's input index, not
# ours. Only a tf.custom_gradient's IdentityN has the function's inputs as its own.
_INCOMPATIBLE_GRADIENT = re.compile(r"Forward operation: IdentityN\. Input index: \d+\. "
                                    r"Original input shape: \(([^)]*)\)\. "
                                    r"Calculated input gradient shape: \(([^)]*)\)")


# A tape's second gradient call over a tf.py_function: its recording was spent by the first.
_SPENT_PY_FUNCTION = re.compile(r"KeyError: b'pyfunc_\d+'")


class GradientShapeError(Exception):
    """The gradient of an input does not have the input's shape or dtype."""


def is_unsupported(error):
    """Whether the error says the mode or device cannot run the op (a skip, not a failure)."""
    return any(marker in str(error) for marker in _UNSUPPORTED_MARKERS)


def is_spent_py_function(error):
    """Whether a gradient call failed because a tf.py_function's tape was used already."""
    return bool(_SPENT_PY_FUNCTION.search(str(error)))


NO_GRADIENT_DEFINED = "no gradient is defined: "  # opens the reason of a LookupError


def gradient_reason(error, inputs):
    """Why the gradient computation failed, for the report."""
    if "No gradient defined" in str(error) or "gradient registry has no entry" in str(error):
        return (NO_GRADIENT_DEFINED + probes.reason(error) + ". Register one with "
                "@tf.RegisterGradient, or mark the op with tf.no_gradient if it has none.")
    wrong_shape = _INCOMPATIBLE_GRADIENT.search(str(error))
    if wrong_shape:
        return _wrong_shape_reason(*wrong_shape.groups(), inputs) or (
            "the gradient computation raised " + probes.reason(error))
    return "the gradient computation raised " + probes.reason(error)


def _wrong_shape_reason(input_shape, gradient_shape, inputs):
    """The wrong-shape message full mode gives, if exactly one input has that shape."""
    shape = _shape(input_shape)
    matching = [x for x in inputs if tuple(x.shape) == shape]
    if len(matching) != 1:
        return ""
    return (f"the gradient for input {matching[0].name!r} has shape {_shape(gradient_shape)}, "
            f"but the input has shape {shape}")


def _shape(text):
    return tuple(int(side) for side in text.replace(",", " ").split())
