"""The Jacobian TensorFlow's gradients give, one batch of VJPs at a time.

Each row is the VJP with a cotangent that is a basis vector times a scale
drawn from {-2, -1/2, 1/2, 2, 4}: never all ones, so a gradient that ignores
or mangles its upstream gradient shows, and a power of two, so dividing the
scale back out is exact.
"""
import numpy as np

from gradcheck import _tf, layout

_SCALES = np.array([-2.0, -0.5, 0.5, 2.0, 4.0])


class GradientShapeError(Exception):
    """The gradient of an input does not have the input's shape or dtype."""


def row_scales(total_rows, rng):
    return rng.choice(_SCALES, size=total_rows)


def analytic_jacobian(run, inputs, wrt, outputs, scales, batch_size):
    """blocks[(k, i)] from batched VJPs.

    `run.vjp(cotangents)` takes one (batch, *shape) array per differentiable
    output and returns one (batch, *shape) gradient per input in `wrt`.
    `inputs` are the CheckInputs, `outputs` the differentiable OutputSpecs.
    """
    total_rows = sum(spec.real_size for spec in outputs)
    rows_per_input = {i: np.empty((total_rows, inputs[i].real_size)) for i in wrt}
    if total_rows == 0:
        # No rows, but the gradient must still exist with the input's shape and dtype.
        grads = run.vjp(_cotangents(outputs, np.arange(0), scales, 1))
        for position, i in enumerate(wrt):
            _check_gradient(grads[position], inputs[i], 1)
    for start in range(0, total_rows, batch_size):
        stop = min(start + batch_size, total_rows)
        cotangents = _cotangents(outputs, np.arange(start, stop), scales, batch_size)
        grads = run.vjp(cotangents)
        for position, i in enumerate(wrt):
            _check_gradient(grads[position], inputs[i], batch_size)
            rows = rows_per_input[i][start:stop]
            rows[...] = layout.real_view_batch(grads[position])[: stop - start]
            rows /= scales[start:stop, None]
    blocks = {}
    for i in wrt:
        row = 0
        for k, spec in enumerate(outputs):
            blocks[(k, i)] = rows_per_input[i][row:row + spec.real_size]
            row += spec.real_size
    return blocks


def _cotangents(outputs, rows, scales, batch_size):
    """One cotangent array per output for the given Jacobian rows, padded to
    `batch_size` with zeros so that every call has the same shape."""
    result, offset = [], 0
    for spec in outputs:
        real = np.zeros((batch_size, spec.real_size), dtype=layout.real_numpy_dtype(_np_dtype(spec.dtype)))
        mine = (rows >= offset) & (rows < offset + spec.real_size)
        positions = np.nonzero(mine)[0]
        real[positions, rows[mine] - offset] = scales[rows[mine]]
        result.append(layout.from_real_view(real, _np_dtype(spec.dtype), spec.shape))
        offset += spec.real_size
    return result


def _np_dtype(name):
    return np.dtype(_tf.numpy_dtype(name))


def _check_gradient(gradient, check_input, batch_size):
    expected_shape = (batch_size,) + check_input.shape
    if gradient.shape != expected_shape:
        raise GradientShapeError(
            f"the gradient for input {check_input.name!r} has shape "
            f"{gradient.shape[1:]}, but the input has shape {check_input.shape}"
        )
    if np.dtype(gradient.dtype) != np.dtype(check_input.value.dtype):
        raise GradientShapeError(
            f"the gradient for input {check_input.name!r} has dtype "
            f"{np.dtype(gradient.dtype).name}, but the input is {check_input.dtype}"
        )

