"""The function and xla modes' runner: forward pass and VJPs as tf.functions
(jit-compiled for xla), traced once per input signature and cached on the target."""
from gradcheck import _tf
from gradcheck.execution.gradients import GradientSlots, columns_from_vjp, gradient_sources
from gradcheck.execution.placement import Placement
from gradcheck.execution.runner import TracedRunner
from gradcheck.execution.sources import ModeNotApplicable
from gradcheck.execution.traces import compiled, traced_forward


class FunctionRunner(TracedRunner):
    """tf.function (with jit_compile for the xla mode): forward and batched VJPs,
    traced once per input signature and reused across checks of the function."""

    def __init__(self, mode, target, inputs, wrt, out_index, device, batch_size):
        tf = _tf.tf()
        if tf.config.functions_run_eagerly():
            raise ModeNotApplicable(
                "tf.config.run_functions_eagerly(True) is on, so tf.function runs the Python "
                f"function eagerly and {mode} mode would trace and compile nothing. Turn it off "
                "for the check to test this mode.")
        self.mode, self.device, self.target = mode, device, target
        self.placement = Placement(device, mode)
        with tf.device(device):
            self.tensors = [tf.constant(value) for value in inputs]
        key = ("function runner", mode, device, tuple(wrt), tuple(out_index))
        self._forward = traced_forward(target, mode, device)
        self.slots, self._vjp, self._vjp_row, self._columns = compiled(
            target, key, lambda: _function_runner_parts(mode, target, wrt, out_index, device))

    def jvp(self, fixed_cotangents, tangents):
        tf = _tf.tf()
        with tf.device(self.device):
            result = self._placed(self._columns, self.tensors,
                                  [tf.constant(c) for c in fixed_cotangents],
                                  [tf.constant(t) for t in tangents])
        return [_tf.to_numpy(c) for c in result]

    def forward(self):
        tf = _tf.tf()
        with tf.device(self.device):
            return [_tf.to_numpy(y) for y in self._placed(self._forward, *self.tensors)]

    def start(self):
        # Every VJP runs the forward pass too (and XLA compiles it again): it runs
        # alone only when a VJP fails, to tell a forward pass that cannot run from a gradient.
        pass


def _function_runner_parts(mode, target, wrt, out_index, device):
    tf = _tf.tf()
    jit = mode == "xla"
    slots = GradientSlots()

    # The device scope is entered inside the traced bodies too (see traced_forward).
    def gradient_of_rows(tensors, cotangents, vectorized):
        tensors = list(tensors)
        with tf.device(device):
            with tf.GradientTape() as tape:
                for i in wrt:
                    tape.watch(tensors[i])
                outputs = target(tensors)
            selected = [outputs[k] for k in out_index]
            sources = gradient_sources(target, tensors, wrt)

            def one_row(row_cotangents):
                grads = tape.gradient(selected, sources, output_gradients=list(row_cotangents))
                return slots.dense(grads, sources)

            if vectorized is None:  # cotangents = (fixed cotangents, tangents): columns
                return columns_from_vjp(one_row, *cotangents)
            if not vectorized:
                return one_row(cotangents)
            return _tf.vectorized_map(one_row, list(cotangents))

    return (slots,
            tf.function(lambda xs, cts: gradient_of_rows(xs, cts, True), jit_compile=jit,
                        autograph=False),
            tf.function(lambda xs, cts: gradient_of_rows(xs, cts, False), jit_compile=jit,
                        autograph=False),
            tf.function(lambda xs, fixed, tangents: gradient_of_rows(xs, (fixed, tangents), None),
                        jit_compile=jit, autograph=False))
