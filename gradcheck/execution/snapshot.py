"""The values of the variables a function touches, taken before the check
first calls it, and put back however the check ends."""
import contextlib

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


def _traced_variables(fn, check_inputs):
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
