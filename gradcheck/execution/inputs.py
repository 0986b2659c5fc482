"""The inputs of a check: what the user passed, normalised to numpy arrays."""
import dataclasses
import inspect

import numpy as np

from gradcheck import _tf
from gradcheck.errors import CheckSetupError, OptionError


@dataclasses.dataclass(frozen=True)
class CheckInput:
    """One argument of the function under test."""

    name: str
    value: np.ndarray
    dtype: str  # TensorFlow's name for it: float32, bfloat16, int32, ...
    variable: object = None  # the tf.Variable this input stands for, if any

    @property
    def differentiable(self):
        return _tf.is_differentiable_dtype(self.dtype)

    @property
    def shape(self):
        return tuple(self.value.shape)

    @property
    def is_complex(self):
        return self.dtype.startswith("complex")

    @property
    def real_size(self):
        """Number of real components: complex elements count twice."""
        return self.value.size * (2 if self.is_complex else 1)

    def describe(self):
        return f"{self.name}: {self.dtype} {self.shape}"


def normalise_inputs(fn, inputs):
    """Turn numpy arrays, tensors and Python numbers into `CheckInput`s.

    Python numbers become what `tf.constant` makes of them (float32, int32,
    complex128), so the function sees what it would see in user code.
    """
    if not isinstance(inputs, (list, tuple)):
        raise OptionError(
            "inputs must be a list or tuple with one value per argument of the "
            f"function, got {type(inputs).__name__}. For one argument, pass [x]."
        )
    names = _argument_names(fn, len(inputs))
    return [_normalise_one(name, value) for name, value in zip(names, inputs)]


def _normalise_one(name, value):
    tf = _tf.tf()
    if isinstance(value, tf.Variable):
        value = value.read_value()
    if isinstance(value, tf.__internal__.CompositeTensor):
        raise OptionError(
            f"input {name!r} is a {type(value).__name__}: gradcheck perturbs dense tensors. "
            "Pass the dense values (tf.sparse.to_dense(s), r.to_tensor()) and rebuild the "
            "sparse or ragged tensor inside the function.")
    if tf.is_tensor(value) and not hasattr(value, "numpy"):
        raise OptionError(
            f"input {name!r} is a symbolic graph tensor; pass its value "
            "(a numpy array or an eager tensor) instead."
        )
    try:
        tensor = tf.convert_to_tensor(value)
    except (TypeError, ValueError) as error:
        raise OptionError(
            f"input {name!r} of type {type(value).__name__} cannot be turned into "
            f"a tensor: {error}"
        ) from None
    return CheckInput(name=name, value=np.array(tensor.numpy()), dtype=tensor.dtype.name)


def require_finite_inputs(check_inputs):
    """Finite differences around a NaN or an infinity mean nothing: refuse them."""
    from gradcheck.numerics import layout

    for x in check_inputs:
        if not x.differentiable:
            continue
        bad = ~np.isfinite(layout.real_view(x.value).astype(np.float64))
        if bad.any():
            first = int(np.flatnonzero(bad)[0])
            where = layout.component_label(x.name, x.shape, x.is_complex, first)
            value = layout.real_view(x.value).reshape(-1)[first]
            raise CheckSetupError(
                f"input {where} is {value}, and {int(bad.sum())} real component(s) of "
                f"{x.name} are not finite: gradients can only be checked at finite inputs. "
                "Draw the inputs from the function's domain (gradcheck.strategies keeps them finite).")


def captured_variables(fn, check_inputs):
    """The trainable float variables `fn` reads, as extra `CheckInput`s.

    Found by calling `fn` once under a tape (eagerly, or else in tf.function).
    """
    tf = _tf.tf()
    found = []

    def call(*tensors):
        with tf.GradientTape() as tape:
            fn(*tensors)
        found[:] = tape.watched_variables()
        return tf.constant(0)

    tensors = [tf.constant(x.value) for x in check_inputs]
    for run in (call, tf.function(call, autograph=False)):
        try:
            run(*tensors)
            break
        except Exception:  # noqa: BLE001  (the check itself reports why fn cannot run)
            found.clear()
    taken = {x.name for x in check_inputs}
    result = []
    for variable in found:
        if not _tf.is_differentiable_dtype(variable.dtype):
            continue
        name = variable.name.split(":")[0]
        name = name if name not in taken else f"variable {name}"
        taken.add(name)
        result.append(CheckInput(name=name, value=np.array(variable.numpy()),
                                 dtype=variable.dtype.name, variable=variable))
    return result


def _argument_names(fn, count):
    """Parameter names of `fn` where they can be read, else x0, x1, ..."""
    fallback = [f"x{i}" for i in range(count)]
    from gradcheck.execution.outputs import unwrap

    try:
        parameters = list(inspect.signature(unwrap(fn)).parameters.values())
    except (TypeError, ValueError):
        return fallback
    positional = [
        p.name
        for p in parameters
        if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
    ]
    if len(positional) < count:
        return fallback
    return positional[:count]


def real_components(inputs):
    """How many real floating components `inputs` hold, read from their shapes
    and dtypes without converting them (a check of a huge input is refused first)."""
    count = 0
    for value in inputs if isinstance(inputs, (list, tuple)) else ():
        dtype = getattr(value, "dtype", None)
        dtype = getattr(dtype, "as_numpy_dtype", dtype)
        try:
            dtype = np.dtype(dtype) if dtype is not None else np.asarray(value).dtype
            size = int(np.prod(value.shape)) if hasattr(value, "shape") else np.size(value)
        except (TypeError, ValueError):
            continue  # refused with its reason when converted
        if dtype.kind in "fc" or dtype.name == "bfloat16":
            count += size * (2 if dtype.kind == "c" else 1)
    return count
