"""Eager mode's runner: the forward pass under a persistent tape, its gradient
taken eagerly for small Jacobians and vectorised, then verified, for large ones."""
import numpy as np

from gradcheck import _tf
from gradcheck.execution import failures
from gradcheck.execution.gradients import GradientSlots, columns_from_vjp, gradient_sources
from gradcheck.execution.placement import Placement
from gradcheck.execution.runner import Runner


class TracedGradientDiffers(Exception):
    """Eager mode's batched (traced) VJPs differ from its truly eager ones."""


class EagerRunner(Runner):
    """Forward pass run eagerly under a persistent tape. The tape is then
    differentiated eagerly, one row at a time, for Jacobians of up to
    EAGER_ROW_LIMIT rows (no tracing at all); larger ones are vectorised in a
    tf.function, and each batch is verified against one truly eager VJP.

    A tape over a tf.py_function answers one gradient call only (TensorFlow
    drops the py_function's recording after it): once a second call says so,
    the forward pass is recorded anew before every gradient call."""

    EAGER_ROW_LIMIT = 256

    def __init__(self, mode, target, inputs, wrt, out_index, device, batch_size):
        tf = _tf.tf()
        self.device, self.target, self.wrt, self.out_index = device, target, wrt, out_index
        self.retape = False
        # Where the forward pass and the first eager VJP ran (the batched VJPs
        # are tf.functions, read as function mode's are).
        self.placement = Placement(device, mode)
        with tf.device(device):
            self.tensors = [tf.constant(value) for value in inputs]
            with self.placement.eager_ops():
                self._record()
        self.sources = gradient_sources(target, self.tensors, wrt)
        self.slots = GradientSlots()
        rows = sum(int(np.prod(y.shape)) * (2 if y.dtype.is_complex else 1) for y in self.selected)
        self.row_by_row = rows <= self.EAGER_ROW_LIMIT
        self._batched = self._columns = None

    def forward(self):
        return [_tf.to_numpy(y) for y in self.outputs]

    def _record(self):
        """The forward pass under a new persistent tape."""
        tf = _tf.tf()
        self.tape = tf.GradientTape(persistent=True)
        with self.tape:
            for i in self.wrt:
                self.tape.watch(self.tensors[i])
            self.outputs = self.target(self.tensors)
        self.selected = [self.outputs[k] for k in self.out_index]

    def _gradient(self, row_cotangents):
        if self.retape:
            self._record()
        try:
            grads = self.tape.gradient(self.selected, self.sources,
                                       output_gradients=list(row_cotangents))
        except Exception as error:  # a spent py_function tape is recorded anew; else re-raised
            if self.retape or not failures.is_spent_py_function(error):
                raise
            self.retape = True
            return self._gradient(row_cotangents)
        return self.slots.dense(grads, self.sources)

    def _vectorized_vjp(self, cotangents):
        grads = self._traced_vjp(cotangents)
        if not self._eager_agrees(cotangents, grads):
            # Gradient code that branches on tf.executing_eagerly() took its
            # traced path: eager mode must be checked eagerly, row by row.
            self.traced_differs = True
            raise TracedGradientDiffers()
        return grads

    def _eager_agrees(self, cotangents, grads):
        """One truly eager VJP, for a random mix of the batch's cotangents, equals
        the same mix of the traced VJPs (a gradient is linear in its cotangent)."""
        weights = np.random.default_rng(len(cotangents[0])).uniform(0.5, 1.5, len(cotangents[0]))
        mixed = [np.tensordot(weights, c, axes=1).astype(c.dtype) for c in cotangents]
        eager = self._row_vjp(mixed)
        for e, g in zip(eager, grads):
            wide = np.asarray(g, dtype=np.complex128 if np.iscomplexobj(g) else np.float64)
            expected = np.tensordot(weights, wide, axes=1)
            scale = np.abs(weights).sum() * max(float(np.max(np.abs(g), initial=0.0)), 1e-30)
            tolerance = 1e3 * float(np.finfo(g.real.dtype).eps) * scale
            with np.errstate(invalid="ignore"):
                if not np.all(np.abs(e - expected) <= tolerance):
                    return False
        return True

    def _traced_vjp(self, cotangents):
        tf = _tf.tf()
        if self._batched is None:
            # tf.vectorized_map traces its loop body on every call; one function
            # for the runner traces it once for all batches (they share a shape).
            self._batched = tf.function(
                lambda batch: _tf.vectorized_map(self._gradient, batch),
                autograph=False)
        with tf.device(self.device):
            result = self.placement.call(self._batched, [tf.constant(c) for c in cotangents])
        return [_tf.to_numpy(g) for g in result]

    def _row_vjp(self, row_cotangents):
        tf = _tf.tf()
        with tf.device(self.device):
            row = [tf.constant(c) for c in row_cotangents]
            if self.placement.read_once("first eager VJP"):
                with self.placement.eager_ops():
                    grads = self._gradient(row)
            else:
                grads = self._gradient(row)
        return [_tf.to_numpy(g) for g in grads]

    def jvp(self, fixed_cotangents, tangents):
        tf = _tf.tf()
        if self._columns is None:
            self._columns = tf.function(
                lambda fixed, batch: columns_from_vjp(self._gradient, fixed, batch), autograph=False)
        with tf.device(self.device):
            result = self.placement.call(self._columns, [tf.constant(c) for c in fixed_cotangents],
                                         [tf.constant(t) for t in tangents])
        return [_tf.to_numpy(c) for c in result]
