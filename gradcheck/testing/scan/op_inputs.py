"""Inputs for an op, found from its OpDef and by trying: dtypes from its type
attributes and CPU kernels, attributes from their defaults, shapes searched
with Hypothesis from small ranks and sides upward, and values where the
forward pass is finite."""
import dataclasses
import inspect
import itertools
import re

import numpy as np
from hypothesis import HealthCheck, find, settings
from hypothesis import strategies as st
from hypothesis.errors import NoSuchExample
from hypothesis.extra import numpy as hnp

from gradcheck import _tf
from gradcheck.numerics import dtypes as dtype_facts
from gradcheck.numerics.compare import TOLERANCES
from gradcheck.testing.scan.hints import NO_HINT

# The order dtypes are tried in: the most precise first, where a verdict is sharpest.
PREFERRED = ("float64", "float32", "complex128", "float16", "complex64", "bfloat16")
# Tried first: every input alike, as elementwise ops want; a matrix first, since
# one example of mixed signs and several elements says most.
SAME_SHAPES = ((2, 3), (), (3,))
MAX_RANK = 4  # images are rank 4 (NHWC): Conv2D, pooling, resizing, SpaceToDepth
SEARCHED = 200  # shape tuples Hypothesis tries per dtype when no same shape fits
# (low, high, signed) magnitudes: away from 0 (kinks of abs, relu) and from 1;
# positive only (log, sqrt); above 1 (acosh) but below pi/2 (the pole of tan).
VALUE_RANGES = ((0.2, 0.9, True), (0.2, 0.9, False), (1.1, 1.45, False), (1.1, 1.45, True))
# Every other example starts above 1, where a clipped or piecewise gradient changes branch.
ABOVE_ONE_FIRST = (VALUE_RANGES[3], VALUE_RANGES[2], VALUE_RANGES[0], VALUE_RANGES[1])
INTEGER_VALUES = (1, 0)  # a shift, an axis, an index: 1 says more, 0 fits more
# Integer inputs that are vectors or tables, sized by the first float input's
# shape: ones (begin, strides, multiples), the shape itself (end, a target shape),
# a reversed permutation (perm, axes), zeros, a (rank, 2) table of ones (paddings),
# and zeros along its first side (segment ids).
SHAPED = ("ones", "shape", "reversed", "zeros", "paddings", "ids")
# TensorFlow's names for the integer inputs whose value is seldom found by trying
# the others alike: the value tried first for each.
NAMED = {"begin": "ones", "size": "ones", "end": "shape", "strides": "ones", "perm": "reversed",
         "paddings": "paddings", "segment_ids": "ids"}
INTEGER_TRIES = 64  # integer-input combinations tried per shape and value range


class NoValidInputs(Exception):
    """What was tried and the errors seen."""


@dataclasses.dataclass(frozen=True)
class Argument:
    name: str
    dtype: str
    count: int  # tensors in a list input (number_attr), else 1
    is_list: bool = False

    @property
    def differentiable(self):
        return self.dtype in TOLERANCES


@dataclasses.dataclass(frozen=True)
class OpCall:
    """One way to call an op: its dtypes and attributes chosen; `fn` takes one
    tensor per input tensor (a list input's tensors in turn)."""

    op_type: str
    arguments: tuple  # Argument per OpDef input
    attrs: tuple  # (name, value) pairs passed explicitly
    hint: object = NO_HINT  # hints.Hint

    def fn(self, raw_op):
        def op(*tensors):
            kwargs, position = dict(self.attrs), 0
            for argument in self.arguments:
                chunk = list(tensors[position:position + argument.count])
                kwargs[argument.name] = chunk if argument.is_list else chunk[0]
                position += argument.count
            outputs = raw_op(**kwargs)
            return list(outputs) if isinstance(outputs, (tuple, list)) else outputs

        op.__name__ = op.__qualname__ = self.op_type
        # The report names each input as the OpDef does.
        op.__signature__ = inspect.Signature(
            [inspect.Parameter(n, inspect.Parameter.POSITIONAL_ONLY) for n in self.tensor_names])
        # A generated op wrapper has no source for AutoGraph, which would warn on every trace.
        return _tf.tf().autograph.experimental.do_not_convert(op)

    @property
    def flat(self):
        return [a for a in self.arguments for _ in range(a.count)]

    @property
    def dtype(self):
        """The dtype of its first differentiated input: what the call is tried in."""
        return next((a.dtype for a in self.flat if a.differentiable), "")

    @property
    def tensor_names(self):
        """'x', or 'inputs_0', 'inputs_1' for a list input."""
        return [f"{a.name}_{k}" if a.is_list else a.name
                for a in self.arguments for k in range(a.count)]


@dataclasses.dataclass(frozen=True)
class Example:
    call: OpCall
    inputs: tuple  # numpy arrays, one per tensor

    @property
    def wrt(self):
        return [i for i, a in enumerate(self.call.flat) if a.differentiable]


def takes_floats(op_type):
    """Whether any input of the op can be floating-point or complex, by its OpDef."""
    op_def = _tf.op_def(op_type)
    float_attrs = {a.name for a in op_def.attr if a.type == "type" and _float_choices(a, {})}
    return any(_fixed_float(arg) or arg.type_attr in float_attrs or arg.type_list_attr
               for arg in op_def.input_arg)


def op_calls(op_type, raw_op, wanted_dtypes=None, hint=NO_HINT):
    """One OpCall per dtype the op can compute its float inputs in, best first."""
    op_def = _tf.op_def(op_type)
    keywords = _input_keywords(op_def, raw_op)
    kernel_types = _cpu_kernel_types(op_type)
    # An output's type with a default (Real's Tout) is left to it: it follows the input's.
    used = {arg.type_attr for arg in op_def.input_arg}
    float_attrs = [a for a in op_def.attr if a.type == "type" and _float_choices(a, kernel_types)
                   and (a.name in used or not a.HasField("default_value"))]
    unsupported = [a.name for a in op_def.attr if a.type in ("func", "list(func)", "list(type)")
                   and not a.HasField("default_value") and a.name not in dict(hint.attrs)]
    if unsupported:
        raise NoValidInputs(f"its attribute(s) {', '.join(unsupported)} take functions or type "
                            "lists, which the scan cannot choose; give an input hint (docs/scan.md).")
    names = [d for d in PREFERRED if wanted_dtypes is None or d in wanted_dtypes]
    if float_attrs:
        candidates = [_call(op_def, {a.name: dtype for a in float_attrs}, kernel_types, keywords,
                            hint)
                      for dtype in names
                      if all(dtype in _float_choices(a, kernel_types) for a in float_attrs)]
    else:  # its float inputs have fixed dtypes: one way to call it
        candidates = [_call(op_def, {}, kernel_types, keywords, hint)]
    calls = [c for c in candidates if c is not None and any(a.differentiable for a in c.arguments)]
    if not calls:
        raise NoValidInputs(f"no float dtype fits its OpDef and CPU kernels (wanted "
                            f"{', '.join(names) or 'none'}).")
    return calls


def examples_of(call, raw_op, count, seed):
    """Up to `count` Examples whose forward pass runs and is finite."""
    fn = call.fn(raw_op)
    errors = {}
    found = []
    for shapes in _shape_candidates(call, fn, seed):
        ranges = VALUE_RANGES if len(found) % 2 == 0 else ABOVE_ONE_FIRST
        example = _with_values(call, fn, shapes, errors, seed + len(found), ranges)
        if example is not None:
            found.append(example)
            if len(found) == count:
                break
    if not found:
        tried = "; ".join(f"{e} (x{n})" if n > 1 else e for e, n in list(errors.items())[:3])
        raise NoValidInputs(f"tried shapes of rank 0 to {MAX_RANK} and values of both signs; errors "
                            f"seen: {tried or 'none'}")
    return found


def _shape_candidates(call, fn, seed):
    """Shape tuples, one shape per tensor: all alike first, then searched."""
    flat, hint = call.flat, call.hint
    tried = []  # the searched shapes differ from these
    for shape in SAME_SHAPES:
        candidate = tuple(_hinted(hint, a, shape if a.differentiable else ()) for a in flat)
        if candidate not in tried:
            tried.append(candidate)
            yield candidate
    floats = [a for a in flat if a.differentiable and hint.shape_of(a.name) is None]
    if not floats:
        return
    strategy = st.tuples(*(hnp.array_shapes(min_dims=0, max_dims=MAX_RANK, min_side=2, max_side=4)
                           for _ in floats))

    def full(float_shapes):
        shapes = iter(float_shapes)
        return tuple(_hinted(hint, a, next(shapes) if a in floats else ()) for a in flat)

    def runs(float_shapes):
        shapes = full(float_shapes)
        return shapes not in tried and _forward_error(fn, _values(
            call, shapes, VALUE_RANGES[1], seed, _integer_choices(call, shapes)[0])) is None

    try:
        found = find(strategy, runs, settings=settings(
            max_examples=SEARCHED, database=None, derandomize=True,
            suppress_health_check=list(HealthCheck)))
    except NoSuchExample:
        return
    yield full(found)


def _hinted(hint, argument, shape):
    hinted = hint.shape_of(argument.name)
    return tuple(hinted) if hinted is not None else shape


def _with_values(call, fn, shapes, errors, seed, ranges):
    for values_range, integers in itertools.product(ranges, _integer_choices(call, shapes)):
        inputs = _values(call, shapes, values_range, seed, integers)
        error = _forward_error(fn, inputs)
        if error is None:
            return Example(call, tuple(inputs))
        errors[error] = errors.get(error, 0) + 1
    return None


def _values(call, shapes, value_range, seed, integers):
    """The inputs: floats drawn in `value_range`, the integer inputs' values in
    turn from `integers` (one array each)."""
    low, high, signed = value_range
    rng = np.random.default_rng(seed)
    integers = iter(integers)
    inputs = []
    for argument, shape in zip(call.flat, shapes):
        given = call.hint.value_of(argument.name)
        if given is not None:
            inputs.append(given.astype(dtype_facts.numpy_dtype(argument.dtype)))
            continue
        if not argument.differentiable:
            inputs.append(next(integers).astype(dtype_facts.numpy_dtype(argument.dtype)))
            continue
        parts = 2 if "complex" in argument.dtype else 1
        real = rng.uniform(low, high, size=(parts,) + tuple(shape))
        if signed:  # half of each sign, so both branches of a kink are seen
            signs = np.where(np.arange(real.size) % 2 == seed % 2, 1.0, -1.0)
            real *= rng.permutation(signs).reshape(real.shape)
        value = real[0] + 1j * real[1] if parts == 2 else real[0]
        inputs.append(np.asarray(value).astype(dtype_facts.numpy_dtype(argument.dtype)))
    return inputs


def _integer_choices(call, shapes):
    """Values for the integer inputs, a tuple of arrays each: every input given
    its k-th candidate alike first (1, then 0, as before), then mixed (Slice's
    begin and size differ), at most INTEGER_TRIES."""
    flat, hint = call.flat, call.hint
    float_shape = next((s for a, s in zip(flat, shapes) if a.differentiable), ())
    lists = [_integer_candidates(a.name, float_shape, hint.shape_of(a.name))
             for a in flat if not a.differentiable and hint.value_of(a.name) is None]
    depth = max((len(c) for c in lists), default=1)
    alike = [tuple(c[min(k, len(c) - 1)] for c in lists) for k in range(depth)]
    indices = sorted(itertools.product(*(range(len(c)) for c in lists)),
                     key=lambda ks: (max(ks, default=0), sum(ks)))
    mixed = [tuple(c[k] for c, k in zip(lists, ks)) for ks in indices]
    choices = []
    for choice in alike + mixed:
        if len(choices) == INTEGER_TRIES:
            break
        if not any(_same(choice, seen) for seen in choices):
            choices.append(choice)
    return choices


def _integer_candidates(name, float_shape, hinted_shape):
    """One integer input's values to try: the scalars, then the shaped ones
    (its name's first); a hinted shape is filled with 1, then 0."""
    if hinted_shape is not None:
        return [np.full(hinted_shape, value) for value in INTEGER_VALUES]
    shape = np.asarray(float_shape, dtype=np.int64)
    shaped = {"ones": np.ones_like(shape), "shape": shape,
              "reversed": np.arange(len(shape))[::-1].copy(), "zeros": np.zeros_like(shape),
              "paddings": np.ones((len(shape), 2), np.int64),
              "ids": np.zeros(shape[:1].prod(initial=1), np.int64)}
    first = NAMED.get(name)
    ordered = ([shaped[first]] if first else []) + [np.asarray(v) for v in INTEGER_VALUES] \
        + [shaped[k] for k in SHAPED if k != first]
    return [c for k, c in enumerate(ordered) if not any(_same((c,), (d,)) for d in ordered[:k])]


def _same(these, those):
    return all(a.shape == b.shape and np.array_equal(a, b) for a, b in zip(these, those))


def _forward_error(fn, inputs):
    """None if the op runs on the inputs with finite, non-empty float outputs;
    else the reason, in a few words."""
    tf = _tf.tf()
    if _tf.is_defun(fn):  # a legacy Defun runs only in a graph
        fn = tf.function(fn)
    try:
        with tf.device("/device:CPU:0"):
            outputs = fn(*[tf.constant(x) for x in inputs])
    except Exception as error:  # noqa: BLE001  (the op's own refusal is the reason)
        return _short(error)
    floats = [np.asarray(_tf.to_numpy(y)) for y in tf.nest.flatten(outputs)
              if _tf.is_differentiable_dtype(y.dtype)]
    if not floats or all(y.size == 0 for y in floats):
        return "no floating-point output"
    if not all(np.all(np.isfinite(y)) for y in floats):
        return "outputs not finite"
    return None


def _input_keywords(op_def, raw_op):
    """The Python function's keyword for each OpDef input, by position: tf.raw_ops
    renames some (Sum's reduction_indices is axis)."""
    try:
        parameters = list(inspect.signature(raw_op).parameters)
    except (TypeError, ValueError):
        parameters = []
    names = [arg.name for arg in op_def.input_arg]
    return parameters[:len(names)] if len(parameters) >= len(names) else names


def _call(op_def, chosen, kernel_types, keywords, hint):
    arguments = []
    for arg, keyword in zip(op_def.input_arg, keywords):
        dtype = _arg_dtype(op_def, arg, chosen, kernel_types)
        if dtype is None:
            return None
        count = _list_length(op_def, arg)
        arguments.append(Argument(keyword, dtype, count, is_list=bool(arg.number_attr)))
    hinted = dict(hint.attrs)
    attrs = tuple((a.name, _attr_value(a)) for a in op_def.attr
                  if a.type != "type" and not a.HasField("default_value")
                  and a.name not in {arg.number_attr for arg in op_def.input_arg}
                  and a.name not in hinted) + _output_types(op_def, chosen, hinted) \
        + tuple(hinted.items())
    unchosen = [name for name, value in attrs if value is None]
    if unchosen:
        raise NoValidInputs(f"its attribute(s) {', '.join(unchosen)} have no default and no "
                            "small value the scan can choose; give an input hint (docs/scan.md).")
    return OpCall(op_def.name, tuple(arguments), attrs, hint)


def _output_types(op_def, chosen, hinted):
    """(name, dtype) for the type attributes with no default that no input has
    (BatchMatMulV3's Tout, Cast's DstT): the float inputs' dtype."""
    used = {arg.type_attr for arg in op_def.input_arg}
    return tuple((a.name, chosen[a.name]) for a in op_def.attr
                 if a.type == "type" and not a.HasField("default_value") and a.name in chosen
                 and a.name not in used and a.name not in hinted)


def _arg_dtype(op_def, arg, chosen, kernel_types):
    if arg.type_list_attr:
        return None
    if arg.type:
        return _tf.tf().as_dtype(arg.type).name
    if arg.type_attr in chosen:
        return chosen[arg.type_attr]
    attr = next(a for a in op_def.attr if a.name == arg.type_attr)
    if attr.HasField("default_value"):
        return _tf.tf().as_dtype(attr.default_value.type).name
    allowed = _allowed(attr, kernel_types)
    integer = [d for d in ("int32", "int64") if d in allowed]
    return integer[0] if integer else None


def _list_length(op_def, arg):
    if not arg.number_attr:
        return 1
    attr = next(a for a in op_def.attr if a.name == arg.number_attr)
    return max(2, attr.minimum if attr.has_minimum else 0)


def _attr_value(attr):
    """A small value for an attribute with no default, or None."""
    if attr.type == "int":
        return max(1, attr.minimum if attr.has_minimum else 1)
    if attr.type == "float":
        return 0.5
    if attr.type == "bool":
        return False
    if attr.type == "string" and attr.allowed_values.list.s:
        return attr.allowed_values.list.s[0].decode()
    return None


def _float_choices(attr, kernel_types):
    return [d for d in _allowed(attr, kernel_types) if d in TOLERANCES]


def _allowed(attr, kernel_types):
    tf = _tf.tf()
    listed = [tf.as_dtype(t).name for t in attr.allowed_values.list.type] or list(PREFERRED)
    kernels = kernel_types.get(attr.name)
    return [d for d in listed if kernels is None or d in kernels]


def _fixed_float(arg):
    return bool(arg.type) and _tf.tf().as_dtype(arg.type).name in TOLERANCES


def _cpu_kernel_types(op_type):
    """{type attr: the dtypes some CPU kernel takes}, from the kernel registry."""
    tf = _tf.tf()
    kernels = _tf.registered_kernels(op_type)
    result = {}
    for kernel in kernels:
        if kernel.device_type != "CPU":
            continue
        for constraint in kernel.constraint:
            result.setdefault(constraint.name, set()).update(
                tf.as_dtype(t).name for t in constraint.allowed_values.list.type)
    return result


def _short(error):
    """'InvalidArgumentError: perm must be rank 1, got shape []': the first line,
    without TensorFlow's function-node prefix and op suffix."""
    text = str(error).splitlines()[0] if str(error) else ""
    text = re.sub(r"^\{\{function_node [^}]*\}\}\s*", "", text)
    text = re.sub(r"\s*\[Op:\w+\].*$", "", text)
    return f"{type(error).__name__}: {text[:160]}" if text else type(error).__name__
