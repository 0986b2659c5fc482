"""Calling the function under test and reading what it returns."""
import collections
import dataclasses

import numpy as np

from gradcheck import _tf
from gradcheck.errors import CheckSetupError


@dataclasses.dataclass(frozen=True)
class OutputSpec:
    """One tensor among the (possibly nested) outputs of the function."""

    name: str
    dtype: str
    shape: tuple

    @property
    def differentiable(self):
        return _tf.is_differentiable_dtype(self.dtype)

    @property
    def is_complex(self):
        return self.dtype.startswith("complex")

    @property
    def real_size(self):
        return int(np.prod(self.shape, dtype=np.int64)) * (2 if self.is_complex else 1)


class FlatFunction:
    """Wraps `fn(*tensors) -> nest of tensors` as `call(list) -> list of tensors`.

    The names of the outputs ('output', 'output[a/0]') are read from the nest
    the first time the function is called.
    """

    def __init__(self, fn):
        self.fn = fn
        self.output_names = None
        self.compiled = {}  # traced tf.functions, reused by later checks of fn

    def __call__(self, tensors):
        result = self.fn(*tensors)
        if result is None:
            raise CheckSetupError(
                f"{describe_function(self.fn)} returned None; it must return a "
                "tensor or a nest (tuple, list, dict) of tensors."
            )
        leaves = _tf.flatten_with_paths(result)
        if not leaves:
            raise CheckSetupError(
                f"{describe_function(self.fn)} returned an empty structure; "
                "there is nothing to differentiate."
            )
        names = [f"output[{path}]" if path else "output" for path, _ in leaves]
        tensors_out = [_as_tensor(name, leaf, self.fn) for name, (_, leaf) in zip(names, leaves)]
        self.output_names = names
        return tensors_out


_FLAT_FUNCTIONS = collections.OrderedDict()  # id(fn) -> (fn, FlatFunction)
_REMEMBERED = 32


def flat_function(fn):
    """The FlatFunction of `fn`, the same object for the same function, so that
    its traces are reused (a Hypothesis test checks one function many times)."""
    entry = _FLAT_FUNCTIONS.get(id(fn))
    if entry is not None and entry[0] is fn:
        _FLAT_FUNCTIONS.move_to_end(id(fn))
        return entry[1]
    flat = FlatFunction(fn)
    _FLAT_FUNCTIONS[id(fn)] = (fn, flat)
    while len(_FLAT_FUNCTIONS) > _REMEMBERED:
        _FLAT_FUNCTIONS.popitem(last=False)
    return flat


def _as_tensor(name, leaf, fn):
    tf = _tf.tf()
    if isinstance(leaf, tf.IndexedSlices):
        return tf.convert_to_tensor(leaf)
    dense = _how_to_densify(leaf)
    if dense:
        raise CheckSetupError(
            f"{describe_function(fn)} returned a {type(leaf).__name__} as {name}: gradcheck "
            f"compares dense tensors. Return {dense} instead.")
    if tf.is_tensor(leaf):
        return leaf
    kind = "None" if leaf is None else f"a {type(leaf).__name__}"
    raise CheckSetupError(
        f"{describe_function(fn)} returned {kind} as {name}, not a tensor. "
        "Return TensorFlow tensors (a value computed from the inputs); a Python "
        "number or numpy array has no gradient."
    )


def _how_to_densify(leaf):
    """For a composite tensor a check cannot compare element by element, how to
    make it dense; else ''."""
    tf = _tf.tf()
    if isinstance(leaf, tf.SparseTensor):
        return "tf.sparse.to_dense(output)"
    if isinstance(leaf, tf.RaggedTensor):
        return "output.to_tensor() (or output.flat_values)"
    return ""


def output_specs(names, values):
    return [
        OutputSpec(name=name, dtype=_tf.tf().as_dtype(value.dtype).name, shape=tuple(value.shape))
        for name, value in zip(names, values)
    ]


def function_name(fn):
    return getattr(unwrap(fn), "__name__", None) or type(fn).__name__


def describe_function(fn):
    return f"the function {function_name(fn)!r}"


def unwrap(fn):
    """The Python function behind a wrapper that hides it (a function.Defun)."""
    return getattr(fn, "_func", fn)
