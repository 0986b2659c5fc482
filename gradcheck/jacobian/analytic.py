"""The Jacobian TensorFlow's gradients give, one batch of VJPs at a time.

Each row is the VJP with a cotangent that is a basis vector times a scale
drawn from {-2, -1/2, 1/2, 2, 4}: never all ones, so a gradient that ignores
or mangles its upstream gradient shows, and a power of two, so dividing the
scale back out is exact.
"""
import numpy as np

from gradcheck.execution.failures import GradientShapeError
from gradcheck.numerics import dtypes, layout
from gradcheck.numerics.weights import signed_weights

_SCALES = np.array([-2.0, -0.5, 0.5, 2.0, 4.0])


class ColumnsUnusable(Exception):
    """The Jacobian cannot be built from columns here; build it from rows."""


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
            check_gradient_shape(grads[position], inputs[i], 1)
    inverse = 1.0 / scales  # exact: the scales are powers of two
    for start in range(0, total_rows, batch_size):
        stop = min(start + batch_size, total_rows)
        cotangents = _cotangents(outputs, np.arange(start, stop), scales, batch_size)
        grads = run.vjp(cotangents)
        for position, i in enumerate(wrt):
            check_gradient_shape(grads[position], inputs[i], batch_size)
            np.multiply(layout.real_view_batch(grads[position])[: stop - start],
                        inverse[start:stop, None], out=rows_per_input[i][start:stop])
    return _split_rows(rows_per_input, wrt, outputs)


def _cotangents(outputs, rows, scales, batch_size):
    """One cotangent array per output for the given Jacobian rows, padded to
    `batch_size` with zeros so that every call has the same shape."""
    result = []
    for k, own in layout.output_rows(outputs):
        spec = outputs[k]
        real_dtype = layout.real_numpy_dtype(dtypes.numpy_dtype(spec.dtype))
        real = np.zeros((batch_size, spec.real_size), dtype=real_dtype)
        mine = (rows >= own.start) & (rows < own.stop)
        positions = np.nonzero(mine)[0]
        real[positions, rows[mine] - own.start] = scales[rows[mine]]
        result.append(layout.from_real_view(real, dtypes.numpy_dtype(spec.dtype), spec.shape))
    return result



def check_gradient_shape(gradient, check_input, batch_size):
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



def columns_pay(inputs, wrt, outputs):
    """Columns (JVPs through the VJP) instead of rows when the inputs have at most
    half as many real components as the outputs; real dtypes only."""
    if any(inputs[i].is_complex for i in wrt) or any(spec.is_complex for spec in outputs):
        return False
    columns = sum(inputs[i].real_size for i in wrt)
    return 0 < 2 * columns <= sum(spec.real_size for spec in outputs)


def jacobian_by_columns(run, inputs, wrt, outputs, scales, batch_size, rng, tolerance_for):
    """blocks[(k, i)] from batched columns J v (`run.jvp`), v = basis vector times
    a scale; then verified: for random cotangents u, the VJPs run.vjp(u) must
    equal J^T u, else the gradient is not linear in its upstream gradient and
    ColumnsUnusable is raised. `tolerance_for(input)` gives (atol, rtol)."""
    fixed = [_random_cotangent(spec, rng) for spec in outputs]
    total_rows = sum(spec.real_size for spec in outputs)
    offsets = np.cumsum([0] + [inputs[i].real_size for i in wrt])
    columns_per_input = {i: np.empty((total_rows, inputs[i].real_size)) for i in wrt}
    for start in range(0, offsets[-1], batch_size):
        stop = min(start + batch_size, offsets[-1])
        tangents = _tangents(inputs, wrt, offsets, np.arange(start, stop), scales, batch_size)
        results = run.jvp(fixed, tangents)
        real = np.concatenate([np.asarray(r, dtype=np.float64).reshape(batch_size, -1)
                               for r in results], axis=1)[: stop - start] / scales[start:stop, None]
        for position, i in enumerate(wrt):
            first, last = max(start, offsets[position]), min(stop, offsets[position + 1])
            if first < last:
                columns_per_input[i][:, first - offsets[position]:last - offsets[position]] = \
                    real[first - start:last - start].T
    blocks = _split_rows(columns_per_input, wrt, outputs)
    _verify_against_vjps(run, blocks, inputs, wrt, outputs, rng, tolerance_for, batch_size)
    return blocks


def _random_cotangent(spec, rng):
    return signed_weights(rng, tuple(spec.shape)).astype(dtypes.numpy_dtype(spec.dtype))


def _tangents(inputs, wrt, offsets, columns, scales, batch_size):
    """One (batch, *shape) tangent per input in wrt: basis vectors times scales."""
    result = []
    for position, i in enumerate(wrt):
        real = np.zeros((batch_size, inputs[i].real_size))
        mine = (columns >= offsets[position]) & (columns < offsets[position + 1])
        real[np.flatnonzero(mine), columns[mine] - offsets[position]] = scales[columns[mine]]
        result.append(real.astype(inputs[i].value.dtype).reshape((batch_size,) + inputs[i].shape))
    return result


def _split_rows(per_input, wrt, outputs):
    return {(k, i): per_input[i][rows] for i in wrt for k, rows in layout.output_rows(outputs)}


def _verify_against_vjps(run, blocks, inputs, wrt, outputs, rng, tolerance_for, batch_size,
                         count=2):
    """Padded to `batch_size` rows, the batch the mode's VJPs are built for."""
    us = [np.concatenate([_random_cotangent(spec, rng).reshape(-1) for spec in outputs])
          for _ in range(count)]
    cotangents = []
    for k, own in layout.output_rows(outputs):
        spec = outputs[k]
        rows = np.zeros((batch_size, spec.real_size))
        rows[:count] = [u[own] for u in us]
        shape = (batch_size, *spec.shape)
        cotangents.append(rows.astype(dtypes.numpy_dtype(spec.dtype)).reshape(shape))
    grads = run.vjp(cotangents)
    for position, i in enumerate(wrt):
        check_gradient_shape(grads[position], inputs[i], batch_size)
        jacobian = np.concatenate([blocks[(k, i)] for k in range(len(outputs))])
        atol, rtol = tolerance_for(inputs[i])
        vjps = np.asarray(grads[position], dtype=np.float64).reshape(batch_size, -1)[:count]
        for u, g in zip(us, vjps):
            allowed = atol + rtol * (np.abs(jacobian).T @ np.abs(u))
            if not np.all(np.abs(g - jacobian.T @ u) <= allowed):
                raise ColumnsUnusable(
                    f"the gradient with respect to {inputs[i].name} is not linear in its "
                    "upstream gradient")
