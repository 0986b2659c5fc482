"""Forward mode: the Jacobian from `tf.autodiff.ForwardAccumulator` JVPs.

One JVP per Jacobian column, with a tangent that is a scaled basis vector,
batched with `tf.vectorized_map`. The result lines up with the reverse-mode
Jacobian and the finite differences block for block.
"""
import numpy as np

from gradcheck import _tf
from gradcheck.execution.gradients import dense_or_zeros, gradient_sources
from gradcheck.numerics import layout

# ForwardAccumulator runs eagerly and inside tf.function; a v1 graph has no use for it.
JVP_MODES = ("eager", "function", "xla")


def forward_jacobian(mode, target, inputs, wrt, out_index, diff_specs, device, scales, batch):
    """blocks[(k, i)] = d(output k) / d(input i), column by column from JVPs."""
    tf = _tf.tf()
    values = [x.value for x in inputs]
    columns = [(i, c) for i in wrt for c in range(inputs[i].real_size)]
    runner = _JvpRunner(mode, target, values, wrt, out_index, device)
    results = {(k, i): np.zeros((spec.real_size, inputs[i].real_size))
               for k, spec in enumerate(diff_specs) for i in wrt}
    for start in range(0, len(columns), batch):
        chosen = columns[start:start + batch]
        tangents = _tangents(inputs, wrt, chosen, scales[start:start + batch], batch)
        with tf.device(device):
            jvps = runner(tangents)
        for row, (i, c) in enumerate(chosen):
            for k in range(len(diff_specs)):
                results[(k, i)][:, c] = layout.real_view_batch(jvps[k])[row] / scales[start + row]
    return results


def _tangents(inputs, wrt, chosen, scales, batch):
    """One tangent array per differentiable input, padded with zeros to `batch`."""
    result = []
    for i in wrt:
        real = np.zeros((batch, inputs[i].real_size), dtype=layout.real_numpy_dtype(inputs[i].value.dtype))
        for row, (j, c) in enumerate(chosen):
            if j == i:
                real[row, c] = scales[row]
        result.append(layout.from_real_view(real, inputs[i].value.dtype, inputs[i].shape))
    return result


class _JvpRunner:
    def __init__(self, mode, target, values, wrt, out_index, device):
        tf = _tf.tf()
        self.mode = mode
        with tf.device(device):
            self.tensors = [tf.constant(v) for v in values]

        def jvp(tensors, tangents):
            tensors = list(tensors)
            primals = gradient_sources(target, tensors, wrt)
            with tf.autodiff.ForwardAccumulator(primals, list(tangents)) as accumulator:
                outputs = target(tensors)
            return [dense_or_zeros(accumulator.jvp(outputs[k]), outputs[k]) for k in out_index]

        def batched(tensors, tangents):
            return _tf.vectorized_map(lambda t: jvp(tensors, t), list(tangents))

        def one_at_a_time(tensors, tangents):
            """Eager JVPs really run eagerly: one tangent after another."""
            rows = [jvp(tensors, [t[b] for t in tangents]) for b in range(tangents[0].shape[0])]
            return [tf.stack(column) for column in zip(*rows)]

        self.call = one_at_a_time if mode == "eager" else tf.function(
            batched, jit_compile=mode == "xla", autograph=False)

    def __call__(self, tangents):
        tf = _tf.tf()
        batch = [tf.constant(t) for t in tangents]
        return [_tf.to_numpy(j) for j in self.call(self.tensors, batch)]
