"""What every mode's runner offers the checker: the forward pass, and VJPs for
a batch of cotangents, vectorised where TensorFlow can and else row by row."""
import numpy as np

from gradcheck import _tf
from gradcheck.execution.batching import rows_if_cheaper


class Runner:
    """`forward()`: the function's flat outputs as numpy arrays.
    `vjp(cotangents)`: for a batch of cotangents (one array per differentiable
    output, leading batch axis), the gradients with respect to the
    differentiable inputs, one array per input with the same batch axis.

    The batch is vectorised when `tf.vectorized_map` can convert the gradient
    and that costs less (batching.py), else computed one row at a time (small
    batches, Defun calls, some custom ops)."""

    row_by_row = False
    vectorization_failed = False
    traced_differs = False
    placement = None  # placement.Placement: where the ops ran, for runners of a mode

    def vjp(self, cotangents):
        if not self.row_by_row:
            rows = rows_if_cheaper(len(cotangents[0]), sum(c[0].size for c in cotangents),
                                   lambda b: self._row_vjp([c[b] for c in cotangents]),
                                   getattr(self, "target", None), self.batch_key())
            if rows is not None:
                return [np.stack(column) for column in zip(*rows)]
            try:
                return self._vectorized_vjp(cotangents)
            except Exception:  # noqa: BLE001  (retried row by row, which raises the real error)
                self.row_by_row = self.vectorization_failed = True
                self.discard_failed_gradient()
        rows = [self._row_vjp([c[b] for c in cotangents]) for b in range(len(cotangents[0]))]
        return [np.stack(column) for column in zip(*rows)]

    def jvp(self, fixed_cotangents, tangents):
        """Jacobian columns J v of the gradient in use, for a batch of tangents v
        (one array per differentiable input, leading batch axis): the VJP is
        differentiated with respect to its cotangent, at `fixed_cotangents`
        (one array per differentiable output). Exact when the VJP is linear in
        its cotangent, as a gradient must be; analytic.py verifies that."""
        raise NotImplementedError(f"{type(self).__name__} computes Jacobian rows only")

    def start(self):
        """Run the forward pass once, so that a mode it cannot run in is known
        before any gradient; raises what the forward pass raises."""
        self.forward()

    def batch_key(self):
        """What names this runner's batches of VJPs among the target's marks
        (see batching.rows_if_cheaper); None: its batched trace dies with it."""
        return None

    def forward_error(self):
        """After a failed VJP: what the forward pass alone raises, or None."""
        try:
            self.forward()
        except Exception as error:  # noqa: BLE001  (the caller reports it)
            return error
        return None

    @property
    def none_inputs(self):
        return self.slots.none_inputs

    def discard_failed_gradient(self):
        """Forget what a failed gradient attempt (batched, or grouped rows) left behind."""

    def close(self):
        pass


class TracedRunner(Runner):
    """A runner whose VJPs are two tf.functions of (inputs, cotangents):
    `self._vjp` for a batch, `self._vjp_row` for one row."""

    def _call(self, function, cotangents):
        tf = _tf.tf()
        with tf.device(self.device):
            batch = [tf.constant(c) for c in cotangents]
            return [_tf.to_numpy(g) for g in self._placed(function, self.tensors, batch)]

    def _placed(self, function, *args):
        """`function(*args)`, its placement read on its first call (mode runners only)."""
        if self.placement is None:
            return function(*args)
        return self.placement.call(function, *args)

    def _vectorized_vjp(self, cotangents):
        return self._call(self._vjp, cotangents)

    def batch_key(self):
        return ("vjp", getattr(self, "mode", "reference"), self.device)

    def _row_vjp(self, row_cotangents):
        return self._call(self._vjp_row, row_cotangents)
