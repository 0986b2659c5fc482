"""The one door to TensorFlow.

TensorFlow takes seconds to import and this package is also a pytest plugin,
imported by every pytest run in the environment, so nothing here imports it
until a check actually needs it.
"""
import contextlib
import importlib
import os
import sys
import threading

_INSTALL_HINT = (
    "gradcheck needs TensorFlow 2.16 or newer, and it is not installed here. "
    "Install it with:  pip install 'gradcheck[cpu]'  (tensorflow-cpu), or "
    "pip install 'gradcheck[tensorflow]'  (the full build, with GPU support)."
)

_module = None
_import_lock = threading.Lock()


def tf():
    """Return the `tensorflow` module, importing it on first use."""
    global _module
    if _module is None:
        with _import_lock:
            if _module is None:
                _module = _import_tensorflow()
    return _module


def _import_tensorflow():
    """Import TensorFlow, its C++ start-up chatter silenced if this is its first
    import. The variable is put back at once: TensorFlow's C++ logging reads it
    once, at its first message, which the import itself writes (docs/troubleshooting.md)."""
    first = "tensorflow" not in sys.modules and "TF_CPP_MIN_LOG_LEVEL" not in os.environ
    if first:
        os.environ["TF_CPP_MIN_LOG_LEVEL"] = "2"
    try:
        import tensorflow
    except ImportError as error:
        raise ImportError(_INSTALL_HINT) from error
    finally:
        if first:
            os.environ.pop("TF_CPP_MIN_LOG_LEVEL", None)
    return tensorflow


def _internal(name):
    """A module of `tensorflow.python`, after `tf()` so that a missing
    TensorFlow gets the install hint."""
    tf()
    return importlib.import_module(f"tensorflow.python.{name}")


class _SharedSetting:
    """A process-wide setting that checks change while they run. Checks may
    overlap in threads, so the first one in saves the user's value and sets
    the check's, and the last one out puts the user's back."""

    def __init__(self, set_for_checks, put_back):
        self._set_for_checks = set_for_checks  # returns the user's value
        self._put_back = put_back
        self._lock = threading.Lock()
        self._holders = 0
        self._saved = None

    @contextlib.contextmanager
    def held(self):
        with self._lock:
            if self._holders == 0:
                self._saved = self._set_for_checks()
            self._holders += 1
        try:
            yield
        finally:
            with self._lock:
                self._holders -= 1
                if self._holders == 0:
                    self._put_back(self._saved)


def _silence_logger():
    logger = tf().get_logger()
    level = logger.level
    logger.setLevel("CRITICAL")
    return level


def _set_logger_level(level):
    tf().get_logger().setLevel(level)


_MISSING = object()
_ALL_INTERMEDIATES = "_EXPERIMENTAL_OUTPUT_ALL_INTERMEDIATES_OVERRIDE"


def _output_all_intermediates():
    """TensorFlow's switch lives in control_flow_util_v2; older builds have none."""
    previous = getattr(_internal("ops.control_flow_util_v2"), _ALL_INTERMEDIATES, _MISSING)
    if previous is not _MISSING:
        tf().compat.v1.experimental.output_all_intermediates(True)
    return previous


def _set_output_all_intermediates(previous):
    if previous is not _MISSING:
        tf().compat.v1.experimental.output_all_intermediates(previous)


def _format_ops_short():
    operation = _internal("framework.ops").Operation
    previous = vars(operation).get("__format__", _MISSING)
    operation.__format__ = lambda op, spec: repr(op)
    return previous


def _set_op_format(previous):
    operation = _internal("framework.ops").Operation
    if previous is _MISSING:
        del operation.__format__
    else:
        operation.__format__ = previous


_logs = _SharedSetting(_silence_logger, _set_logger_level)
_all_intermediates = _SharedSetting(_output_all_intermediates, _set_output_all_intermediates)
_op_format = _SharedSetting(_format_ops_short, _set_op_format)


def quiet_logs():
    """Silence TensorFlow's Python logs (retracing, failed pfor conversions) during a
    check: the check builds functions on purpose, and says what matters itself."""
    return _logs.held()


def outputting_all_intermediates():
    """While loops and conds built inside output all their intermediates, so
    that gradients can still be added to a v1 graph after a session has run it
    (else the session fails with "Connecting to invalid output"). The switch
    is TensorFlow's process-wide one, restored on the way out; where this
    TensorFlow has no such switch, nothing changes."""
    return _all_intermediates.held()


def vectorized_map(fn, elems):
    """`tf.vectorized_map(fn, elems)`, falling back to a while loop where an op
    has no vectorised form. Ops format as their short repr meanwhile: pfor logs
    every op it converts, whole NodeDef and all (docs/benchmarks.md)."""
    with _op_format.held():
        return tf().vectorized_map(fn, elems, fallback_to_while_loop=True)


def gradient_registry():
    """TensorFlow's registry of gradient functions by name (`tf.RegisterGradient`'s)."""
    ops = _internal("framework.ops")

    return ops.gradient_registry


def is_defun(value):
    """A legacy `function.Defun`: graph-only, and tapes under tf.function get no
    gradient for it."""
    function = _internal("framework.function")

    return isinstance(value, (function._DefinedFunction, function._OverloadedFunction))


def is_custom_gradient(value):
    """A function decorated with tf.custom_gradient (its TFDecorator says so)."""
    decorator = getattr(value, "_tf_decorator", None)
    return getattr(decorator, "decorator_name", None) == "custom_gradient"


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


def eager_by_default():
    """False after tf.compat.v1.disable_eager_execution()."""
    context = _internal("eager.context")
    return context.default_execution_mode == context.EAGER_MODE


@contextlib.contextmanager
def op_callback(callback):
    """`callback(op_type, inputs, attrs, outputs, op_name, graph)` after every
    op this thread runs eagerly (or adds to a graph) in the block: TensorFlow's
    op callbacks, which tf.debugging.experimental.enable_dump_debug_info uses too."""
    callbacks = _internal("framework.op_callbacks")
    callbacks.add_op_callback(callback)
    try:
        yield
    finally:
        callbacks.remove_op_callback(callback)


def eager_context():
    """The eager context: its graph collection gives the partitioned graphs of
    the tf.functions it instantiates (with the device of every node)."""
    return _internal("eager.context").context()


def op_def(op_type):
    """The registered OpDef of an op type, or None (a function called by name)."""
    return _internal("framework.op_def_registry").get(op_type)


def registered_kernels(op_type):
    """The kernels registered for an op type (KernelDef protos: device, type constraints)."""
    return _internal("framework.kernels").get_registered_kernels_for_op(op_type).kernel
