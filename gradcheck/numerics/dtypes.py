"""Dtype facts from numpy and ml_dtypes (bfloat16), without TensorFlow."""
import ml_dtypes  # installed with TensorFlow; it knows bfloat16
import numpy as np

from gradcheck.numerics import layout


def numpy_dtype(name):
    """The numpy dtype for a floating or complex dtype name, bfloat16 included."""
    return np.dtype(ml_dtypes.bfloat16) if str(name) == "bfloat16" else np.dtype(name)


def coarsest(*dtypes):
    """The least precise of some floating or complex dtypes (names or numpy)."""
    return max((str(np.dtype(d)) if not isinstance(d, str) else d for d in dtypes),
               key=lambda d: float(finfo(d).eps))


def finfo(dtype):
    return ml_dtypes.finfo(layout.real_numpy_dtype(dtype))


# numpy reads 'float' as float64 where TensorFlow's OpDefs mean float32: left
# for the caller to refuse, as an unknown name, rather than guessed.
AMBIGUOUS_NAMES = frozenset({"float", "complex", "int"})


def dtype_name(dtype):
    """'float64' for 'float64', 'f8', 'double', np.float64, np.dtype('float64')
    or tf.float64 (anything numpy reads as a dtype, or with a TensorFlow
    `.as_numpy_dtype`). A string numpy does not know is returned as it is."""
    if isinstance(dtype, str):
        if dtype in AMBIGUOUS_NAMES:
            return dtype
        try:
            return numpy_dtype(dtype).name
        except TypeError:
            return dtype
    as_numpy = getattr(dtype, "as_numpy_dtype", None)  # a tf.DType
    return np.dtype(as_numpy if as_numpy is not None else dtype).name
