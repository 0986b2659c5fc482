"""The values of the variables a function touches, taken before the check
first calls it, and put back however the check ends."""
import contextlib
import threading
import weakref

import numpy as np

from gradcheck import _tf


class VariableSnapshot:
    """Variables and their values, by identity."""

    def __init__(self):
        self._kept = {}  # id -> (variable, value)

    def add(self, variables):
        """Keep the present value of each variable not kept yet."""
        for variable in variables:
            if id(variable) not in self._kept:
                self._kept[id(variable)] = (variable, np.array(variable.numpy()))

    def changed(self, variables):
        """Those of `variables` whose value is no longer the one kept."""
        return [v for v in variables
                if id(v) in self._kept and not np.array_equal(
                    self._kept[id(v)][1], v.numpy(), equal_nan=True)]

    def restore(self):
        for variable, value in self._kept.values():
            variable.assign(value)


@contextlib.contextmanager
def kept_variables(fn, check_inputs):
    """The variables `fn` touches, as a tf.function trace of it finds them
    without running it, restored on the way out."""
    snapshot = VariableSnapshot()
    snapshot.add(_traced_variables(fn, check_inputs))
    try:
        yield snapshot
    finally:
        snapshot.restore()


# {fn: {input signature: weak references to its variables}}: a trace costs more
# than a small check (Hypothesis calls one function hundreds of times), and, as
# tf.function's own traces, the variables of one signature are taken to stay put.
_found = weakref.WeakKeyDictionary()
_found_lock = threading.Lock()


def _traced_variables(fn, check_inputs):
    signature = tuple((x.shape, x.dtype) for x in check_inputs)
    with _found_lock:
        try:
            known = _found.get(fn, {}).get(signature)
        except TypeError:  # fn takes no weak reference: trace it every time
            known = None
    variables = None if known is None else [ref() for ref in known]
    if variables is None or any(v is None for v in variables):
        variables = _trace_for_variables(fn, check_inputs)
        with _found_lock, contextlib.suppress(TypeError):
            _found.setdefault(fn, {})[signature] = [weakref.ref(v) for v in variables]
    return variables


def _trace_for_variables(fn, check_inputs):
    """Every variable the trace reads or assigns (trainable or not). Tracing
    runs no op, so the values are still those from before the check."""
    tf = _tf.tf()
    specs = [tf.TensorSpec(x.shape, tf.as_dtype(x.dtype)) for x in check_inputs]
    with _tf.quiet_logs():
        try:
            graph = tf.function(fn, autograph=False).get_concrete_function(*specs).graph
        except Exception:  # noqa: BLE001  (untraceable: its variables are found by the first call)
            return []
    return [v for v in graph.variables if v is not None]
