"""The function evaluated at perturbed inputs, for finite differences."""
import numpy as np

from gradcheck import _tf
from gradcheck.errors import CheckSetupError
from gradcheck.execution.batching import rows_if_cheaper
from gradcheck.execution.perturbed import PerturbedPoints
from gradcheck.execution.traces import compiled, traced_forward


def batched_evaluator(target, inputs, out_index, device, names=None, specs=None):
    """`evaluate(i, batch)` for `numeric_jacobian` (see BatchedEvaluator)."""
    return BatchedEvaluator(target, inputs, out_index, device, PerturbedPoints(inputs, names, specs))


class BatchedEvaluator:
    """`evaluate(i, batch)`: the differentiable outputs for a batch of values of
    input i, the other inputs fixed at `inputs`.

    Vectorised in one tf.function where `tf.vectorized_map` can convert the
    function; else one perturbed input at a time (`at`: Defun calls, captured
    variables, functions that read tensor values in Python).

    A function that raises at a perturbed input, or whose outputs change shape
    there, is named with the element and the step (`points`, a PerturbedPoints).
    """

    def __init__(self, target, inputs, out_index, device, points=None):
        tf = _tf.tf()
        self.device, self.target, self.out_index = device, target, out_index
        self.points = points or PerturbedPoints(inputs)
        self.fixed = [tf.constant(v) for v in inputs]
        # Perturbed values of variables are assigned to them: vectorised, the
        # reads would be hoisted out of the loop and see none of them.
        self._vectorises = not getattr(target, "variable_slots", None)
        self._traces, self._traced = True, None

    def __call__(self, i, batch):
        rows = None
        if self._vectorises:
            rows = rows_if_cheaper(len(batch), batch[0].size, lambda b: self.at(i, batch[b]),
                                   self.target, self._key(i))
            if rows is None:
                outputs = self._vectorised_or_none(i, batch)
                if outputs is not None:
                    return outputs
        if rows is None:
            rows = [self.at(i, xi) for xi in batch]
        return [np.stack(column) for column in zip(*rows)]

    def _vectorised_or_none(self, i, batch):
        """The batch's outputs vectorised, or None (and never again) where that fails."""
        try:
            outputs = self._vectorised(i, batch)
        except CheckSetupError:
            raise
        except Exception:  # noqa: BLE001  (one at a time raises the real error)
            self._vectorises = False
            return None
        if self.points.shapes_agree(outputs, batched=True):
            return outputs
        self._vectorises = False  # one at a time names the input that changed a shape
        return None

    def _vectorised(self, i, batch):
        """All of input i's values in one call. The other inputs are arguments
        too, so the trace is cached on the target and reused by later checks."""
        tf = _tf.tf()
        target, out_index = self.target, self.out_index

        def build():
            return tf.function(
                lambda b, others: _tf.vectorized_map(
                    lambda xi: _outputs_with(target, out_index, others, i, xi), b),
                autograph=False)

        function = compiled(target, self._key(i), build)
        with tf.device(self.device):
            return [_tf.to_numpy(r) for r in function(tf.constant(batch), self.fixed)]

    def _key(self, i):
        return ("finite differences", i, tuple(self.out_index))

    def at(self, i, xi):
        """The differentiable outputs with input i at one value `xi`, from the
        probe's trace of the function (nothing is traced here), or eagerly for a
        function that cannot be traced. Fast mode projects one perturbed input
        at a time: for large inputs that is as fast as a batch, and needs no
        batch-sized temporaries."""
        tf = _tf.tf()
        tensors = list(self.fixed)
        try:
            with tf.device(self.device):
                tensors[i] = tf.constant(xi)
                outputs = self._forward(tensors)
        except CheckSetupError:
            raise
        except Exception as error:  # the function raised there: named for the user, re-raised
            raise self.points.raised(i, xi, error) from error
        outputs = [_tf.to_numpy(outputs[k]) for k in self.out_index]
        self.points.require_shapes(i, xi, outputs)
        return outputs

    def _forward(self, tensors):
        if self._traces:
            try:
                if self._traced is None:
                    # Kept here too: not every target caches its traces.
                    self._traced = traced_forward(self.target, "function", self.device)
                return self._traced(*tensors)
            except CheckSetupError:
                raise
            except Exception:  # noqa: BLE001  (the eager call raises the real error)
                self._traces = False
        return self.target(tensors)


def _outputs_with(target, out_index, tensors, i, xi):
    """The differentiable outputs of `target` with input i replaced by xi."""
    tensors = list(tensors)
    tensors[i] = xi
    outputs = target(tensors)
    return [outputs[k] for k in out_index]
