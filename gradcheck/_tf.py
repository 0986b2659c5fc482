"""The one door to TensorFlow.

TensorFlow takes seconds to import and this package is also a pytest plugin,
imported by every pytest run in the environment, so nothing here imports it
until a check actually needs it.
"""
import contextlib
import importlib
import os

_INSTALL_HINT = (
    "gradcheck needs TensorFlow 2.16 or newer, and it is not installed here. "
    "Install it with:  pip install 'gradcheck[cpu]'  (tensorflow-cpu), or "
    "pip install 'gradcheck[tensorflow]'  (the full build, with GPU support)."
)

_module = None


def tf():
    """Return the `tensorflow` module, importing it on first use."""
    global _module
    if _module is None:
        os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
        try:
            import tensorflow
        except ImportError as error:
            raise ImportError(_INSTALL_HINT) from error
        _module = tensorflow
    return _module


def _internal(name):
    """A module of `tensorflow.python`, after `tf()` so that a missing
    TensorFlow gets the install hint."""
    tf()
    return importlib.import_module(f"tensorflow.python.{name}")


@contextlib.contextmanager
def quiet_logs():
    """Silence TensorFlow's Python logs (retracing, failed pfor conversions) during a
    check: the check builds functions on purpose, and says what matters itself."""
    logger = tf().get_logger()
    level = logger.level
    logger.setLevel("CRITICAL")
    try:
        yield
    finally:
        logger.setLevel(level)


@contextlib.contextmanager
def outputting_all_intermediates():
    """While loops and conds built inside output all their intermediates, so
    that gradients can still be added to a v1 graph after a session has run it
    (else the session fails with "Connecting to invalid output"). The switch
    is TensorFlow's process-wide one, restored on the way out; where this
    TensorFlow has no such switch, nothing changes."""
    control_flow_util_v2 = _internal("ops.control_flow_util_v2")

    missing = object()
    previous = getattr(control_flow_util_v2, "_EXPERIMENTAL_OUTPUT_ALL_INTERMEDIATES_OVERRIDE",
                       missing)
    if previous is missing:
        yield
        return
    tf().compat.v1.experimental.output_all_intermediates(True)
    try:
        yield
    finally:
        tf().compat.v1.experimental.output_all_intermediates(previous)


def vectorized_map(fn, elems):
    """`tf.vectorized_map(fn, elems)`, falling back to a while loop where an op
    has no vectorised form. Ops format as their short repr meanwhile: pfor logs
    every op it converts, whole NodeDef and all (docs/benchmarks.md)."""
    ops = _internal("framework.ops")

    operation = ops.Operation
    had_own = "__format__" in vars(operation)
    previous = vars(operation).get("__format__")
    operation.__format__ = lambda op, spec: repr(op)
    try:
        return tf().vectorized_map(fn, elems, fallback_to_while_loop=True)
    finally:
        if had_own:
            operation.__format__ = previous
        else:
            del operation.__format__


def gradient_registry():
    """TensorFlow's registry of gradient functions by name (`tf.RegisterGradient`'s)."""
    ops = _internal("framework.ops")

    return ops.gradient_registry


def is_defun(value):
    """A legacy `function.Defun`: graph-only, and tapes under tf.function get no
    gradient for it."""
    function = _internal("framework.function")

    return isinstance(value, (function._DefinedFunction, function._OverloadedFunction))


def to_numpy(tensor):
    """The tensor's values as a read-only numpy array. Unlike `tensor.numpy()`
    it does not copy them (on the CPU): batches of Jacobian rows are tens of MB."""
    import numpy as np

    try:
        array = np.asarray(tensor)
    except ValueError:  # bfloat16 has no view: numpy() converts it
        array = np.asarray(tensor.numpy())
    array.flags.writeable = False
    return array


def flatten_with_paths(structure):
    """Flatten a nest of outputs into (path, leaf) pairs, e.g. ('a/0', t)."""
    nest = _internal("util.nest")

    return nest.flatten_with_joined_string_paths(structure)


def numpy_dtype(dtype):
    """The numpy dtype for a TensorFlow dtype (bfloat16 comes from ml_dtypes)."""
    return tf().as_dtype(dtype).as_numpy_dtype


def is_differentiable_dtype(dtype):
    dtype = tf().as_dtype(dtype)
    return dtype.is_floating or dtype.is_complex
