"""Hypothesis strategies for gradient checks: dtypes, shapes, and tensors whose
values come from a domain that is safe in every dtype.

    from gradcheck.testing import strategies as gs
    x = gs.tensors(gs.dtypes(), gs.shapes(max_rank=2), elements=gs.positive())
"""
import collections.abc
import dataclasses
import functools
import math
import numbers

import numpy as np
from hypothesis import strategies as st
from hypothesis.errors import InvalidArgument
from hypothesis.extra import numpy as hnp

from gradcheck.errors import DeviceUnavailable, OptionError
from gradcheck.execution import devices
from gradcheck.numerics.dtypes import dtype_name, numpy_dtype

FLOATING = ("float16", "bfloat16", "float32", "float64")
COMPLEX = ("complex64", "complex128")
# Keep every generated value well inside float16's range (max 65504), so that
# no example is wasted on overflow after the cast.
_SAFE_BOUND = 1e3


def dtypes(*, floating=True, complex=False, only=None, exclude=(), fn=None, device=None):
    """Dtype names: floating (float16, bfloat16, float32, float64) and/or complex
    ones. `only` and `exclude` take one dtype (a name, numpy or TensorFlow dtype)
    or a list of them. With `fn`, only the dtypes `fn` has kernels for on
    `device` (tried once on a small input, soft placement off) are drawn."""
    names = (FLOATING if floating else ()) + (COMPLEX if complex else ())
    if only is not None:
        chosen = _dtype_names(only, "only")
        names = tuple(n for n in FLOATING + COMPLEX if n in chosen)
    excluded = _dtype_names(exclude, "exclude") if exclude is not None else []
    names = tuple(n for n in names if n not in excluded)
    if not names:
        raise InvalidArgument("dtypes() has no dtype left to draw: allow floating or complex, "
                              "or loosen only=/exclude=")
    if fn is None:
        if device is not None:
            raise InvalidArgument(f"device={device!r} is where fn's kernels are tried; pass fn= "
                                  "too, or leave device out")
        return st.sampled_from(names)
    if not callable(fn):
        raise InvalidArgument(f"fn must be a function to try each dtype on, got {fn!r}")
    return st.sampled_from(names).filter(functools.partial(_has_kernel, fn, _one_device(device)))


def _dtype_names(value, argument):
    """Names for one dtype-like or a list of them, refused unless all are drawable."""
    values = [value] if _is_one_dtype(value) else list(value)
    unknown = [v for v in values if _drawable_name(v) is None]
    if unknown:
        raise InvalidArgument(f"{argument}={value!r} names unknown dtypes {unknown!r}; choose "
                              f"from {', '.join(FLOATING + COMPLEX)}")
    return [_drawable_name(v) for v in values]


def _dtype(value, argument="dtype"):
    """The name of one dtype-like ('float64', np.float64, tf.float64, ...)."""
    name = _drawable_name(value)
    if name is None:
        raise InvalidArgument(f"{argument}={value!r} is not a dtype these strategies draw; pass one "
                              f"of {', '.join(FLOATING + COMPLEX)} (a name, numpy or TensorFlow "
                              "dtype), or a strategy such as dtypes()")
    return name


def _is_one_dtype(value):
    # A string is one name, not a list of characters.
    return isinstance(value, str) or not isinstance(value, collections.abc.Iterable)


def _drawable_name(value):
    if value is None or isinstance(value, bool):  # np.dtype(None) would be float64
        return None
    try:
        name = dtype_name(value)
    except (TypeError, ValueError):
        return None
    return name if name in FLOATING + COMPLEX else None


def _one_device(device):
    """The canonical name of the one device kernels are tried on, refused unless
    TensorFlow sees it (soft placement would run them on the CPU instead)."""
    if device is None:
        return devices.CPU
    if not isinstance(device, str) or "," in device or device.strip().lower() == "all":
        raise InvalidArgument(f"device must name one device such as 'CPU:0' or 'GPU:0', got {device!r}")
    try:
        return devices.resolve_devices([device])[0]
    except DeviceUnavailable as error:
        raise DeviceUnavailable(f"dtypes(device={device!r}) cannot try fn's kernels there: {error} "
                                "Leave device out for the CPU, or skip the test where the device "
                                "is missing.") from None
    except OptionError as error:
        raise InvalidArgument(f"device={device!r}: {error}") from None


def _has_kernel(fn, device, dtype):
    return _kernel_check(fn, device, dtype)


@functools.lru_cache(maxsize=256)
def _kernel_check(fn, device, dtype):
    from gradcheck import _tf

    tf = _tf.tf()
    soft = tf.config.get_soft_device_placement()
    # With soft placement, an op with no kernel on `device` runs on the CPU and passes.
    tf.config.set_soft_device_placement(False)
    try:
        with tf.device(device):
            fn(tf.cast(tf.constant([0.5, 1.0]), dtype))
        return True
    except Exception:  # noqa: BLE001  (any failure means: not for this dtype)
        return False
    finally:
        tf.config.set_soft_device_placement(soft)


def shapes(*, min_rank=0, max_rank=3, min_side=0, max_side=4, max_size=64):
    """Shapes from scalars up, zero-size sides included when min_side is 0."""
    _check_rank_and_sides(min_rank, max_rank, min_side, max_side, max_size)
    sides = st.integers(min_side, max_side)
    return st.lists(sides, min_size=min_rank, max_size=max_rank).map(tuple).filter(
        lambda shape: math.prod(shape) <= max_size)


def broadcastable_shapes(num_shapes=2, *, min_rank=0, max_rank=3, min_side=1, max_side=4,
                         max_size=64):
    """Tuples of `num_shapes` shapes that broadcast together, so that gradients of
    broadcast inputs (which must be summed back to the input's shape) are exercised."""
    if not isinstance(num_shapes, int) or num_shapes < 1:
        raise InvalidArgument(f"num_shapes must be a positive integer, got {num_shapes!r}")
    _check_rank_and_sides(min_rank, max_rank, min_side, max_side, max_size)
    return hnp.mutually_broadcastable_shapes(
        num_shapes=num_shapes, min_dims=min_rank, max_dims=max_rank, min_side=min_side,
        max_side=max_side).map(lambda b: b.input_shapes).filter(
        lambda group: all(math.prod(s) <= max_size for s in group))


def _check_rank_and_sides(min_rank, max_rank, min_side, max_side, max_size):
    for name, value in (("min_rank", min_rank), ("max_rank", max_rank), ("min_side", min_side),
                        ("max_side", max_side), ("max_size", max_size)):
        if not isinstance(value, int) or value < 0:
            raise InvalidArgument(f"{name} must be a non-negative integer, got {value!r}")
    if min_rank > max_rank:
        raise InvalidArgument(f"min_rank={min_rank} is larger than max_rank={max_rank}")
    if min_side > max_side:
        raise InvalidArgument(f"min_side={min_side} is larger than max_side={max_side}")
    if max_side > 0 and min_rank > 0 and min_side ** min_rank > max_size:
        raise InvalidArgument(f"no shape of rank >= {min_rank} with sides >= {min_side} fits "
                              f"in max_size={max_size}")


@dataclasses.dataclass(frozen=True)
class Domain:
    """Where element values come from. `avoid` keeps values at least `margin`
    away from points (kinks); `include` makes those exact values likely."""

    low: float = -2.0
    high: float = 2.0
    nonzero: bool = False
    avoid: tuple = ()
    margin: float = 0.05
    include: tuple = ()
    transform: str = ""  # "unit_norm", "well_conditioned"

    def elements(self, width=64):
        """Floats of `width` bits within [low, high] (bounds rounded inward to that width)."""
        low, high = _inward(self.low, self.high, width)
        values = st.floats(low, high, allow_nan=False, allow_infinity=False, width=width)
        if self.include:
            values = st.one_of(st.sampled_from(self.include), values)
        return values


def interval(low, high, *, avoid=(), margin=0.05, include=()):
    """Values in [low, high]; `avoid` and `include` take one number or a list."""
    low, high = _bound("low", low), _bound("high", high)
    if low >= high:
        raise InvalidArgument(f"low={low:g} must be smaller than high={high:g}")
    margin = _number("margin", margin)
    if margin <= 0:
        raise InvalidArgument(f"margin must be positive, got {margin!r}")
    points = _points("include", include)
    for point in points:
        if not low <= point <= high:
            raise InvalidArgument(f"include={include!r}: {point:g} is outside [{low:g}, {high:g}]")
    return Domain(low, high, avoid=_points("avoid", avoid), margin=margin, include=points)


def _number(name, value):
    """`value` as a float, refused unless a finite real (numpy scalars included)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not math.isfinite(value):
        raise InvalidArgument(f"{name} must be a finite number, got {value!r}")
    return float(value)


def _bound(name, value):
    value = _number(name, value)
    if abs(value) > _SAFE_BOUND:
        raise InvalidArgument(f"{name}={value:g} lies outside [-{_SAFE_BOUND:g}, {_SAFE_BOUND:g}], "
                              "where every dtype (float16 included) is safe")
    return value


def _points(name, value):
    values = [value] if isinstance(value, numbers.Number) else value
    if isinstance(values, str) or not isinstance(values, collections.abc.Iterable):
        raise InvalidArgument(f"{name} must be a number or a list of numbers, got {value!r}")
    points = list(values)
    bad = [p for p in points if isinstance(p, bool) or not isinstance(p, numbers.Real)
           or not math.isfinite(p)]
    if bad:
        raise InvalidArgument(f"{name}={value!r}: {bad[0]!r} is not a finite number")
    return tuple(float(p) for p in points)


def positive(low=0.1, high=4.0):
    """Values in [low, high], low > 0 (for log, sqrt, reciprocal)."""
    if _number("low", low) <= 0:
        raise InvalidArgument(f"positive() needs low > 0, got {low!r}")
    return interval(low, high)


def nonzero(low=-2.0, high=2.0, margin=0.1):
    """Values in [low, high] at least `margin` away from zero."""
    return dataclasses.replace(interval(low, high, avoid=(0.0,), margin=margin), nonzero=True)


def unit_norm(low=-1.0, high=1.0):
    """Vectors of norm 1 along the last axis."""
    return dataclasses.replace(interval(low, high), transform="unit_norm")


def well_conditioned(low=-1.0, high=1.0):
    """Square matrices (..., n, n) made diagonally dominant, so solves and inverses
    are well conditioned."""
    return dataclasses.replace(interval(low, high), transform="well_conditioned")


def tensors(dtype, shape, elements=None, *, distinct=False):
    """numpy arrays of `dtype` (a name, numpy or TensorFlow dtype) and `shape` (a
    tuple, an int for one axis), each a value or a strategy. `elements` is a
    Domain (default interval(-2, 2)), or a Hypothesis strategy such as
    st.floats(-1, 1, width=32), used as hnp.arrays uses it.

    distinct=True draws no repeated values (max, sort and top-k gradients are
    undefined at ties)."""
    elements = interval(-2.0, 2.0) if elements is None else elements
    if not isinstance(elements, (Domain, st.SearchStrategy)):
        raise InvalidArgument(f"elements must be a Domain such as interval(-1, 1) or positive(), "
                              f"or a Hypothesis strategy such as st.floats(-1, 1), got {elements!r}")
    # Fixed values are checked now, drawn ones as they are drawn.
    dtype_strategy = dtype if isinstance(dtype, st.SearchStrategy) else st.just(_dtype(dtype))
    domain = elements if isinstance(elements, Domain) else Domain()
    if isinstance(shape, st.SearchStrategy):
        shape_strategy = shape
    else:
        shape_strategy = st.just(_fitting_shape(shape, domain))
    draw = _array if isinstance(elements, Domain) else _array_of
    return st.tuples(dtype_strategy, shape_strategy).flatmap(
        lambda pair: draw(pair[0], pair[1], elements, distinct))


def _array_of(dtype, shape, elements, distinct):
    """Arrays whose elements a Hypothesis strategy draws, by Hypothesis' own rules
    (hnp.arrays converts each value to the dtype). bfloat16, which hnp does
    not know, is drawn in float32 and rounded. numpy only: TensorFlow is not
    imported while drawing."""
    dtype, shape = _dtype(dtype), _fitting_shape(shape, Domain())
    drawn = np.float32 if dtype == "bfloat16" else numpy_dtype(dtype)
    raw = hnp.arrays(drawn, shape, elements=elements, fill=st.nothing(), unique=distinct)
    return raw if dtype != "bfloat16" else raw.map(lambda a: a.astype(numpy_dtype(dtype)))


def _fitting_shape(shape, domain):
    """`shape` as a tuple of ints, refused unless its sides are ints >= 0 and it
    suits the domain."""
    sides = (shape,) if isinstance(shape, numbers.Integral) else shape
    if isinstance(sides, str) or not isinstance(sides, collections.abc.Iterable):
        raise InvalidArgument(f"shape must be a tuple of sides such as (2, 3), or a strategy "
                              f"such as shapes(), got {shape!r}")
    sides = tuple(sides)
    if not all(isinstance(n, numbers.Integral) and not isinstance(n, bool) and n >= 0 for n in sides):
        raise InvalidArgument(f"shape={shape!r} has a side that is not an integer >= 0")
    sides = tuple(int(n) for n in sides)
    if domain.transform == "well_conditioned" and (len(sides) < 2 or sides[-1] != sides[-2]):
        raise InvalidArgument(f"well_conditioned() needs square matrices (..., n, n), got shape {sides}")
    return sides


def _array(dtype, shape, domain, distinct):
    dtype, shape = _dtype(dtype), _fitting_shape(shape, domain)
    parts = 2 if dtype.startswith("complex") else 1
    # Distinct values are drawn in the dtype's own width: distinct float64s
    # often round to one float32 (Hypothesis likes neighbouring floats), and the
    # filter below would then reject most arrays.
    width = _IEEE_WIDTH.get(dtype, 64) if distinct else 64
    raw = hnp.arrays(np.float64, (parts, *shape), elements=domain.elements(width),
                     fill=st.nothing(), unique=distinct)
    return raw.map(lambda values: _finish(values, dtype, domain)).filter(
        lambda array: not distinct or _distinct_after_cast(array))


def _finish(values, dtype, domain):
    values = _keep_away(values, domain)
    value = values[0] + 1j * values[1] if len(values) == 2 else values[0]
    if domain.transform == "unit_norm" and value.ndim:
        norm = np.linalg.norm(value, axis=-1, keepdims=True)
        safe = np.where(norm > 1e-3, norm, 1.0)
        value = np.where(norm > 1e-3, value / safe, 1.0 / math.sqrt(max(value.shape[-1], 1)))
    if domain.transform == "well_conditioned":
        n = value.shape[-1]
        value = value + (n + 1.0) * np.eye(n)
    return np.asarray(value).astype(numpy_dtype(dtype))


_IEEE_WIDTH = {"float16": 16, "float32": 32, "complex64": 32}


def _inward(low, high, width):
    """The bounds rounded inward to `width`-bit floats, so that no draw falls outside."""
    if width == 64:
        return low, high
    kind = {16: np.float16, 32: np.float32}[width]
    narrow_low, narrow_high = kind(low), kind(high)
    if narrow_low < low:
        narrow_low = np.nextafter(narrow_low, kind(np.inf))
    if narrow_high > high:
        narrow_high = np.nextafter(narrow_high, kind(-np.inf))
    return float(narrow_low), float(narrow_high)


def _keep_away(values, domain):
    for point in domain.avoid:
        close = np.abs(values - point) < domain.margin
        pushed = point + np.where(values >= point, domain.margin, -domain.margin)
        values = np.where(close, pushed, values)
    return np.clip(values, domain.low, domain.high)


def _distinct_after_cast(array):
    flat = array.reshape(-1)
    return len(np.unique(flat)) == flat.size
