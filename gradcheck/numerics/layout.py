"""Tensors as vectors of real numbers, the way Jacobians index them.

A complex element counts as two real components, real part then imaginary
part, which is also how TensorFlow's own gradient checker lays them out.
"""
import numpy as np


def real_numpy_dtype(dtype):
    dtype = np.dtype(dtype)
    if dtype.kind == "c":
        return np.dtype(np.float32 if dtype.itemsize == 8 else np.float64)
    return dtype


def real_view(x):
    """The real components of `x` as a flat array."""
    x = np.ascontiguousarray(x)
    return x.reshape(-1).view(real_numpy_dtype(x.dtype))


def real_view_batch(batch):
    """(B, *shape) -> (B, real components)."""
    batch = np.ascontiguousarray(batch)
    flat = batch.reshape(batch.shape[0], -1)
    return flat.view(real_numpy_dtype(batch.dtype))


def from_real_view(real_rows, dtype, shape):
    """(B, real components) -> (B, *shape) in `dtype`."""
    real_rows = np.ascontiguousarray(real_rows, dtype=real_numpy_dtype(dtype))
    return real_rows.view(np.dtype(dtype)).reshape((real_rows.shape[0],) + tuple(shape))


def component_label(name, shape, is_complex, component):
    """'x[1, 2]' (or 'x[1, 2].imag') for real component `component` of a tensor."""
    element, part = divmod(component, 2) if is_complex else (component, 0)
    index = np.unravel_index(element, shape) if shape else ()
    label = f"{name}[{', '.join(str(int(i)) for i in index)}]" if shape else name
    if is_complex:
        label += ".imag" if part else ".real"
    return label


def output_rows(outputs):
    """(k, rows of output k) in the stacked real components of all `outputs`
    (anything with a `real_size`): the one place that lays outputs end to end."""
    row = 0
    for k, spec in enumerate(outputs):
        yield k, slice(row, row + spec.real_size)
        row += spec.real_size
