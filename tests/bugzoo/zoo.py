"""A zoo of realistic wrong gradients, one entry per bug.

Each entry names the function, its inputs, the `check_gradients` options it needs
and what gradcheck must say about it: which input has the wrong gradient, and,
for bugs confined to a region or to some modes, which elements or modes.
`fixed` is the corrected function (same inputs and options, or `fixed_options`),
for a sanity check that the harness passes right gradients. `control_inputs` are
inputs at which the same wrong code is right (another dtype or shape): the bug
must be specific to what the entry says.

Used by tests/bugzoo/test_bugzoo.py and tests/bugzoo/table.py.
"""
import dataclasses
from typing import Callable, Optional

import numpy as np
import tensorflow as tf
from tensorflow.python.framework import function

from tests.bugzoo import zoo_ops as ops

SOURCES = ("C++ custom op", "RegisterGradient override map", "tf.custom_gradient",
           "Defun grad_func", "Defun python_grad_func")
CPP, OVERRIDE, CUSTOM, DEFUN_GRAD, DEFUN_PYTHON = SOURCES

KINDS = (
    "wrong sign", "wrong constant", "missing term", "ignores upstream gradient",
    "missing broadcast reduction", "transposed matrix", "wrong input's gradient",
    "missing conjugate", "wrong in one region", "wrong only for float16",
    "wrong only for empty or scalar input", "wrong only in some modes",
    "nondeterministic", "wrong second derivative", "wrong variable gradient",
)
(SIGN, CONSTANT, MISSING_TERM, IGNORES_UPSTREAM, BROADCAST, TRANSPOSED, SWAPPED, CONJUGATE,
 REGION, FLOAT16, EMPTY_OR_SCALAR, MODE, NONDETERMINISTIC, SECOND_ORDER, VARIABLE) = KINDS

ALL_MODES = ("eager", "function", "graph", "xla")
TAPE_AND_GRAPH = ("eager", "graph")
CPP_MODES = ("eager", "function", "graph")  # no XLA kernel for custom ops


@dataclasses.dataclass(frozen=True)
class Bug:
    name: str
    kind: str
    source: str
    fn: Callable
    inputs: tuple
    wrong_input: str  # the input gradcheck must blame, as it names it
    options: dict = dataclasses.field(default_factory=dict)  # for check_gradients
    wrong_elements: Optional[frozenset] = None  # the worst element must be one of these
    wrong_modes: Optional[frozenset] = None  # the only modes where the gradient is wrong
    fixed: Optional[Callable] = None  # the corrected function
    fixed_options: Optional[dict] = None  # its options, if not `options`
    control_inputs: Optional[tuple] = None  # where the same wrong gradient is right
    note: str = ""

    def __post_init__(self):
        assert self.kind in KINDS, self.kind
        assert self.source in SOURCES, self.source

    def __str__(self):
        return self.name


rng = np.random.default_rng(20240611)


def positive(*shape, dtype=np.float64):
    return rng.uniform(0.5, 1.5, size=shape).astype(dtype)


def normal(*shape, dtype=np.float64):
    return rng.normal(size=shape).astype(dtype)


def complex_normal(*shape):
    return rng.normal(size=shape) + 1j * rng.normal(size=shape)


def elements(name, indices):
    return frozenset(f"{name}[{', '.join(map(str, np.atleast_1d(i)))}]" for i in indices)


MIXED = np.array([-1.3, -0.4, 0.3, 0.8, 1.7, -0.9])  # no element near 0
NEGATIVE_MIXED = elements("x", np.flatnonzero(MIXED < 0))

ZOO = []


def bug(**fields):
    entry = Bug(**fields)
    assert entry.name not in {b.name for b in ZOO}, entry.name
    ZOO.append(entry)
    return entry


# ============================== tf.custom_gradient ==============================

@tf.custom_gradient
def square_wrong_sign(x):
    return x * x, lambda dy: -2.0 * x * dy


@tf.custom_gradient
def square(x):
    return x * x, lambda dy: 2.0 * x * dy


bug(name="cg_square_wrong_sign", kind=SIGN, source=CUSTOM, fn=square_wrong_sign,
    inputs=(positive(2, 3),), wrong_input="x", options={"modes": TAPE_AND_GRAPH}, fixed=square)


def _variance(x, bessel):
    n = tf.cast(tf.size(x), x.dtype)
    centred = x - tf.reduce_mean(x)

    def grad(dy):
        return dy * 2.0 * centred / (n - 1.0 if bessel else n)

    return tf.reduce_mean(centred * centred), grad


@tf.custom_gradient
def variance_bessel_gradient(x):
    """The forward divides by n, the gradient by n - 1."""
    return _variance(x, bessel=True)


@tf.custom_gradient
def variance(x):
    return _variance(x, bessel=False)


bug(name="cg_variance_n_minus_1", kind=CONSTANT, source=CUSTOM, fn=variance_bessel_gradient,
    inputs=(normal(5),), wrong_input="x", options={"modes": TAPE_AND_GRAPH}, fixed=variance)


@tf.custom_gradient
def x_sin_x_half_product_rule(x):
    return x * tf.sin(x), lambda dy: dy * x * tf.cos(x)  # + sin(x) is missing


bug(name="cg_x_sin_x_missing_term", kind=MISSING_TERM, source=CUSTOM,
    fn=x_sin_x_half_product_rule, inputs=(positive(4),), wrong_input="x",
    options={"modes": TAPE_AND_GRAPH})


@tf.custom_gradient
def exp_ignoring_upstream(x):
    y = tf.exp(x)
    return y, lambda dy: y


bug(name="cg_exp_ignores_upstream", kind=IGNORES_UPSTREAM, source=CUSTOM, fn=exp_ignoring_upstream,
    inputs=(normal(3, 2),), wrong_input="x", options={"modes": TAPE_AND_GRAPH})


@tf.custom_gradient
def add_column_bias_unreduced(x, b):
    """x (3, 4) + b (3, 1): b's gradient takes the first column instead of the row sums."""
    return x + b, lambda dy: (dy, dy[:, :1])


@tf.custom_gradient
def add_column_bias(x, b):
    return x + b, lambda dy: (dy, tf.reduce_sum(dy, axis=1, keepdims=True))


bug(name="cg_column_bias_missing_reduction", kind=BROADCAST, source=CUSTOM,
    fn=add_column_bias_unreduced, inputs=(normal(3, 4), normal(3, 1)), wrong_input="b",
    options={"modes": TAPE_AND_GRAPH}, fixed=add_column_bias)


@tf.custom_gradient
def matmul_no_transpose(a, b):
    return a @ b, lambda dy: (dy @ tf.transpose(b), a @ dy)  # b's gradient needs a^T dy


bug(name="cg_matmul_transposed", kind=TRANSPOSED, source=CUSTOM, fn=matmul_no_transpose,
    inputs=(normal(3, 3), normal(3, 2)), wrong_input="b", options={"modes": TAPE_AND_GRAPH})


@tf.custom_gradient
def divide_copy_paste(x, y):
    return x / y, lambda dy: (dy / y, dy / y)  # y's line is x's; should be -dy x / y^2


bug(name="cg_divide_copy_paste", kind=SWAPPED, source=CUSTOM, fn=divide_copy_paste,
    inputs=(normal(4), positive(4) + 0.5), wrong_input="y", options={"modes": TAPE_AND_GRAPH})


@tf.custom_gradient
def complex_exp_no_conj(z):
    y = tf.exp(z)
    return y, lambda dy: dy * y  # TensorFlow's convention: dy * conj(f'(z))


@tf.custom_gradient
def complex_exp(z):
    y = tf.exp(z)
    return y, lambda dy: dy * tf.math.conj(y)


bug(name="cg_complex_exp_missing_conj", kind=CONJUGATE, source=CUSTOM, fn=complex_exp_no_conj,
    inputs=(0.5 * complex_normal(3),), wrong_input="z", options={"modes": TAPE_AND_GRAPH},
    fixed=complex_exp)


@tf.custom_gradient
def leaky_relu_negative_branch(x):
    y = tf.where(x >= 0, x, 0.1 * x)
    return y, lambda dy: tf.where(x >= 0, dy, 0.1 * x * dy)  # should be 0.1 * dy


bug(name="cg_leaky_relu_negative_branch", kind=REGION, source=CUSTOM,
    fn=leaky_relu_negative_branch, inputs=(MIXED,), wrong_input="x",
    wrong_elements=NEGATIVE_MIXED, options={"modes": TAPE_AND_GRAPH})

LOGITS = np.array([9.5, 10.25, 11.75, 12.5])


@tf.custom_gradient
def logsumexp_naive_softmax(x):
    def grad(dy):
        e = tf.exp(x)  # no max subtracted: inf in float16 once x > 11.1
        return dy * e / tf.reduce_sum(e)

    return tf.reduce_logsumexp(x), grad


bug(name="cg_logsumexp_float16_overflow", kind=FLOAT16, source=CUSTOM, fn=logsumexp_naive_softmax,
    inputs=(LOGITS.astype(np.float16),), wrong_input="x", options={"modes": TAPE_AND_GRAPH},
    control_inputs=(LOGITS.astype(np.float32),))


@tf.custom_gradient
def norm_scalar_path(x):
    norm = tf.sqrt(tf.reduce_sum(x * x))

    def grad(dy):
        if x.shape.rank == 0:
            return dy  # "the norm of a scalar is the scalar": |x|' is sign(x)
        return dy * x / norm

    return norm, grad


bug(name="cg_norm_scalar_path", kind=EMPTY_OR_SCALAR, source=CUSTOM, fn=norm_scalar_path,
    inputs=(np.array(-1.3),), wrong_input="x", options={"modes": TAPE_AND_GRAPH},
    control_inputs=(np.array([-1.3, 0.4, 2.0]),))


@tf.custom_gradient
def scale_by_sum_of_squares(x, y):
    """y * (1 + sum(x^2)); y's gradient is written with a mean, nan for an empty x."""
    s = tf.reduce_sum(x * x)

    def grad(dy):
        n = tf.cast(tf.size(x), x.dtype)
        return 2.0 * x * tf.reduce_sum(dy * y), dy * (1.0 + n * tf.reduce_mean(x * x))

    return y * (1.0 + s), grad


bug(name="cg_empty_input_mean", kind=EMPTY_OR_SCALAR, source=CUSTOM, fn=scale_by_sum_of_squares,
    inputs=(np.zeros(0), normal(3)), wrong_input="y", options={"modes": TAPE_AND_GRAPH},
    control_inputs=(normal(2), normal(3)))


@tf.custom_gradient
def softsign_traced_path_wrong(x):
    def grad(dy):
        if tf.executing_eagerly():
            return dy / tf.square(1.0 + tf.abs(x))
        return dy / (1.0 + tf.abs(x))  # the traced path forgot the square

    return x / (1.0 + tf.abs(x)), grad


bug(name="cg_softsign_wrong_when_traced", kind=MODE, source=CUSTOM, fn=softsign_traced_path_wrong,
    inputs=(MIXED[:4],), wrong_input="x", options={"modes": ALL_MODES},
    wrong_modes=frozenset({"function", "graph", "xla"}))


@tf.custom_gradient
def log1p_square_v1_graph_path(x):
    def grad(dy):
        if not tf.executing_eagerly() and not tf.inside_function():
            return dy * 2.0 * x / tf.square(1.0 + x)  # the tf.compat.v1 branch: (1 + x)^2
        return dy * 2.0 * x / (1.0 + x * x)

    return tf.math.log1p(x * x), grad


bug(name="cg_log1p_square_wrong_in_v1_graph", kind=MODE, source=CUSTOM,
    fn=log1p_square_v1_graph_path, inputs=(normal(4),), wrong_input="x",
    options={"modes": ALL_MODES}, wrong_modes=frozenset({"graph"}))


@tf.custom_gradient
def sin_cos_square_traced_path(x):
    """Three outputs per input element (a wide Jacobian); wrong inside tf.function."""
    def grad(dy):
        cos_sign = -1.0 if tf.inside_function() else 1.0  # the traced path flips d sin
        return dy[0] * cos_sign * tf.cos(x) - dy[1] * tf.sin(x) + dy[2] * 2.0 * x

    return tf.stack([tf.sin(x), tf.cos(x), x * x]), grad


bug(name="cg_wide_output_wrong_in_tf_function", kind=MODE, source=CUSTOM,
    fn=sin_cos_square_traced_path, inputs=(normal(3),), wrong_input="x",
    options={"modes": ALL_MODES}, wrong_modes=frozenset({"function", "xla"}),
    note="the eager check must not run the gradient inside a tf.function")


@tf.custom_gradient
def square_noisy_gradient(x):
    """Multiplicative gradient noise (1% relative): right on average."""
    def grad(dy):
        return dy * 2.0 * x * (1.0 + 0.01 * tf.random.normal(tf.shape(x), dtype=x.dtype))

    return x * x, grad


bug(name="cg_square_gradient_noise", kind=NONDETERMINISTIC, source=CUSTOM, fn=square_noisy_gradient,
    inputs=(positive(5, dtype=np.float32),), wrong_input="x", options={"modes": TAPE_AND_GRAPH})


@tf.custom_gradient
def tanh_stop_gradient_output(x):
    y = tf.tanh(x)
    return y, lambda dy: dy * (1.0 - tf.square(tf.stop_gradient(y)))


@tf.custom_gradient
def tanh_saved_output(x):
    y = tf.tanh(x)
    return y, lambda dy: dy * (1.0 - tf.square(y))


bug(name="cg_tanh_stop_gradient_second_order", kind=SECOND_ORDER, source=CUSTOM,
    fn=tanh_stop_gradient_output, inputs=(normal(3),), wrong_input="x",
    options={"modes": TAPE_AND_GRAPH, "order": 2}, fixed=tanh_saved_output)


@tf.custom_gradient
def cos_with_wrong_gradient(x):
    return tf.cos(x), lambda dy: dy * tf.sin(x)  # d cos / dx = -sin


@tf.custom_gradient
def sin_nested_gradient(x):
    return tf.sin(x), lambda dy: dy * cos_with_wrong_gradient(x)


bug(name="cg_sin_nested_wrong_second_order", kind=SECOND_ORDER, source=CUSTOM,
    fn=sin_nested_gradient, inputs=(normal(3),), wrong_input="x",
    options={"modes": TAPE_AND_GRAPH, "order": 2})


@tf.custom_gradient
def x_times_y_squared_frozen_y(x, y):
    """x y^2: x's gradient freezes y, so d(grad x)/dy is 0 instead of 2 y dz."""
    return x * y * y, lambda dz: (dz * tf.square(tf.stop_gradient(y)), dz * 2.0 * x * y)


@tf.custom_gradient
def x_times_y_squared(x, y):
    return x * y * y, lambda dz: (dz * tf.square(y), dz * 2.0 * x * y)


bug(name="cg_mixed_second_derivative_frozen_input", kind=SECOND_ORDER, source=CUSTOM,
    fn=x_times_y_squared_frozen_y, inputs=(normal(3), normal(3)), wrong_input="y",
    options={"modes": TAPE_AND_GRAPH, "order": 2}, fixed=x_times_y_squared)


def make_amplify(reduce):
    gain = tf.Variable(1.7, dtype=tf.float64, name="zoo_gain")

    @tf.custom_gradient
    def amplify(x):
        def grad(dy, variables):
            return dy * gain, [reduce(dy * x)]

        return gain * x, grad

    return amplify


bug(name="cg_variable_gradient_mean_not_sum", kind=VARIABLE, source=CUSTOM,
    fn=make_amplify(tf.reduce_mean), inputs=(normal(4),), wrong_input="zoo_gain",
    options={"modes": ("eager", "function")}, fixed=make_amplify(tf.reduce_sum))


def make_dense(forget_kernel):
    kernel = tf.Variable(rng.normal(size=(3, 2)), name="zoo_kernel")

    @tf.custom_gradient
    def dense_tanh(x):
        y = tf.tanh(x @ kernel)

        def grad(dy, variables):
            pre = dy * (1.0 - y * y)
            d_kernel = tf.zeros_like(kernel) if forget_kernel else tf.transpose(x) @ pre
            return pre @ tf.transpose(kernel), [d_kernel]

        return y, grad

    return dense_tanh


bug(name="cg_variable_gradient_zeros", kind=VARIABLE, source=CUSTOM, fn=make_dense(True),
    inputs=(normal(2, 3),), wrong_input="zoo_kernel", options={"modes": ("eager", "function")},
    fixed=make_dense(False))


@tf.custom_gradient
def add_row_bias_unreduced(x, b):
    """x (3, 4) + b (1, 4): b's gradient is returned unreduced, with x's shape."""
    return x + b, lambda dy: (dy, dy)


bug(name="cg_row_bias_unreduced_wrong_shape", kind=BROADCAST, source=CUSTOM,
    fn=add_row_bias_unreduced, inputs=(normal(3, 4), normal(1, 4)), wrong_input="b",
    options={"modes": TAPE_AND_GRAPH},
    note="the gradient has the wrong shape: every mode must fail and name b")

TABLE = normal(5, 3)
IDS = np.array([0, 2, 2, 4], dtype=np.int32)  # row 2 is looked up twice


def make_embedding_lookup(dedupe):
    @tf.custom_gradient
    def embedding_lookup(table):
        ids = tf.constant(IDS)

        def grad(dy):
            dense_shape = tf.shape(table)
            if dedupe:  # one row per unique id, from its first occurrence: no segment sum
                unique, position = tf.unique(ids)
                first = tf.math.unsorted_segment_min(tf.range(tf.size(ids)), position,
                                                     tf.size(unique))
                return tf.IndexedSlices(tf.gather(dy, first), unique, dense_shape)
            return tf.IndexedSlices(dy, ids, dense_shape)

        return tf.gather(table, ids), grad

    return embedding_lookup


bug(name="cg_embedding_duplicate_ids_not_summed", kind=BROADCAST, source=CUSTOM,
    fn=make_embedding_lookup(dedupe=True), inputs=(TABLE,), wrong_input="table",
    wrong_elements=elements("table", [(2, 0), (2, 1), (2, 2)]), options={"modes": TAPE_AND_GRAPH},
    fixed=make_embedding_lookup(dedupe=False),
    note="an IndexedSlices gradient; the reduction over repeated ids is missing")


@tf.custom_gradient
def sin_and_cos_drops_second_upstream(x):
    return (tf.sin(x), tf.cos(x)), lambda d_sin, d_cos: d_sin * tf.cos(x)  # - d_cos * sin(x)


bug(name="cg_two_outputs_second_upstream_dropped", kind=MISSING_TERM, source=CUSTOM,
    fn=sin_and_cos_drops_second_upstream, inputs=(normal(3),), wrong_input="x",
    options={"modes": TAPE_AND_GRAPH})

LARGE = (17, 16)  # 272 outputs: more Jacobian rows than eager mode differentiates one by one

bug(name="cg_softsign_wrong_when_traced_272_elements", kind=MODE, source=CUSTOM,
    fn=softsign_traced_path_wrong, inputs=(normal(*LARGE),), wrong_input="x",
    options={"modes": ("eager", "function", "graph")},
    wrong_modes=frozenset({"function", "graph"}),
    note="cg_softsign_wrong_when_traced with a larger input: eager code is right")

def make_scaled_embedding(dedupe):
    table = tf.Variable(rng.normal(size=(5, 3)), name="zoo_table")

    @tf.custom_gradient
    def scaled_embedding(scale):
        ids = tf.constant(IDS)
        rows = tf.gather(table, ids)

        def grad(dy, variables):
            d_rows = dy * scale
            if dedupe:  # the variable's IndexedSlices keep one row per unique id
                unique, position = tf.unique(ids)
                first = tf.math.unsorted_segment_min(tf.range(tf.size(ids)), position,
                                                     tf.size(unique))
                d_table = tf.IndexedSlices(tf.gather(d_rows, first), unique, tf.shape(table))
            else:
                d_table = tf.IndexedSlices(d_rows, ids, tf.shape(table))
            return tf.reduce_sum(dy * rows), [d_table]

        return rows * scale, grad

    return scaled_embedding


bug(name="cg_variable_embedding_duplicate_ids", kind=VARIABLE, source=CUSTOM,
    fn=make_scaled_embedding(dedupe=True), inputs=(np.array(1.3),), wrong_input="zoo_table",
    wrong_elements=elements("zoo_table", [(2, 0), (2, 1), (2, 2)]),
    options={"modes": ("eager", "function")}, fixed=make_scaled_embedding(dedupe=False))

# ================================= C++ custom ops =================================
# The wrong gradient is registered under the op's own name (tests/bugzoo/zoo_ops.py).

bug(name="cpp_cube_negated", kind=SIGN, source=CPP, fn=ops.zoo_cube_negated,
    inputs=(normal(5),), wrong_input="x", options={"modes": CPP_MODES}, fixed=ops.zoo_cube)

bug(name="cpp_cube_ignores_upstream", kind=IGNORES_UPSTREAM, source=CPP,
    fn=ops.zoo_cube_ignores_upstream, inputs=(normal(2, 2),), wrong_input="x",
    options={"modes": CPP_MODES})

bug(name="cpp_cube_float16_through_int8", kind=FLOAT16, source=CPP, fn=ops.zoo_cube_half_int8,
    inputs=(positive(4, dtype=np.float16),), wrong_input="x", options={"modes": CPP_MODES},
    fixed=ops.zoo_cube, control_inputs=(positive(4, dtype=np.float32),))

bug(name="cpp_cube_eager_fast_path", kind=MODE, source=CPP, fn=ops.zoo_cube_eager_fast_path,
    inputs=(positive(4),), wrong_input="x", options={"modes": CPP_MODES},
    wrong_modes=frozenset({"eager"}))

bug(name="cpp_cube_eager_fast_path_272_elements", kind=MODE, source=CPP,
    fn=ops.zoo_cube_eager_fast_path, inputs=(positive(*LARGE),), wrong_input="x",
    options={"modes": CPP_MODES}, wrong_modes=frozenset({"eager"}),
    note="cpp_cube_eager_fast_path with a larger input")

bug(name="cpp_cube_stochastic_rounding", kind=NONDETERMINISTIC, source=CPP,
    fn=ops.zoo_cube_stochastic_rounding, inputs=(normal(4),), wrong_input="x",
    options={"modes": CPP_MODES})

bug(name="cpp_cube_stop_gradient_second_order", kind=SECOND_ORDER, source=CPP,
    fn=ops.zoo_cube_stop_gradient, inputs=(positive(3),), wrong_input="x",
    options={"modes": ("eager", "graph"), "order": 2}, fixed=ops.zoo_cube)

bug(name="cpp_leaky_relu_wrong_negative_slope", kind=REGION, source=CPP,
    fn=ops.zoo_leaky_relu_wrong_negative_slope, inputs=(MIXED,), wrong_input="x",
    wrong_elements=NEGATIVE_MIXED, options={"modes": CPP_MODES}, fixed=ops.zoo_leaky_relu)

bug(name="cpp_mul_copy_paste", kind=SWAPPED, source=CPP, fn=ops.zoo_mul_copy_paste,
    inputs=(normal(4), normal(4)), wrong_input="y", options={"modes": CPP_MODES}, fixed=ops.zoo_mul)

bug(name="cpp_scale_scalar_path", kind=EMPTY_OR_SCALAR, source=CPP, fn=ops.zoo_scale_scalar_path,
    inputs=(np.array(0.8), np.array(-2.5)), wrong_input="x", options={"modes": CPP_MODES},
    fixed=ops.zoo_scale, control_inputs=(normal(3), np.array(-2.5)))


def make_scale_by_variable(op):
    a = tf.Variable(0.7, dtype=tf.float64, name="zoo_a")

    def scale_by_variable(x):
        return op(x, a)

    return scale_by_variable


bug(name="cpp_scale_variable_gradient_none", kind=VARIABLE, source=CPP,
    fn=make_scale_by_variable(ops.zoo_scale_forgets_a), inputs=(normal(3),), wrong_input="zoo_a",
    options={"modes": ("eager", "function")}, fixed=make_scale_by_variable(ops.zoo_scale))

bug(name="cpp_mat_vec_no_transpose", kind=TRANSPOSED, source=CPP, fn=ops.zoo_mat_vec_no_transpose,
    inputs=(normal(3, 3), normal(3)), wrong_input="x", options={"modes": CPP_MODES},
    fixed=ops.zoo_mat_vec)

bug(name="cpp_bias_add_first_row", kind=BROADCAST, source=CPP, fn=ops.zoo_bias_add_first_row,
    inputs=(normal(3, 4), normal(4)), wrong_input="b", options={"modes": CPP_MODES},
    fixed=ops.zoo_bias_add)

bug(name="cpp_complex_square_missing_conj", kind=CONJUGATE, source=CPP, fn=ops.zoo_c_square_no_conj,
    inputs=(complex_normal(3),), wrong_input="z", options={"modes": CPP_MODES},
    fixed=ops.zoo_c_square)

# ====================== RegisterGradient + gradient_override_map ======================
# Only tf.gradients honours the map: graph mode is checked, the tape modes are
# reported as not applicable.


def matmul(a, b):
    return tf.matmul(a, b)


bug(name="override_matmul_transposed", kind=TRANSPOSED, source=OVERRIDE, fn=matmul,
    inputs=(normal(3, 3), normal(3, 2)), wrong_input="b",
    options={"override_map": {"MatMul": "ZooGradMatMulNoTranspose"}},
    fixed_options={"override_map": {"MatMul": "ZooGradMatMul"}})


def square_op(x):
    return tf.square(x)


bug(name="override_square_forgets_the_two", kind=CONSTANT, source=OVERRIDE, fn=square_op,
    inputs=(normal(4),), wrong_input="x",
    options={"override_map": {"Square": "ZooGradSquareForgetsTheTwo"}},
    fixed_options={"override_map": {"Square": "ZooGradSquare"}})


def x_sin_x(x):
    return x * tf.sin(x)


bug(name="override_mul_half_product_rule", kind=MISSING_TERM, source=OVERRIDE, fn=x_sin_x,
    inputs=(positive(4),), wrong_input="x", options={"override_map": {"Mul": "ZooGradMulOnlyFirst"}})

WEIGHTS = normal(4)


def zoo_mul_by_weights(x):
    return ops.zoo_mul(x, tf.constant(WEIGHTS))


bug(name="override_zoo_mul_ignores_upstream", kind=IGNORES_UPSTREAM, source=OVERRIDE,
    fn=zoo_mul_by_weights, inputs=(normal(4),), wrong_input="x",
    options={"override_map": {"ZooMul": "ZooGradMulIgnoresUpstream"}},
    fixed_options={"override_map": {"ZooMul": "ZooMul"}})


def subtract(x, y):
    return tf.subtract(x, y)


bug(name="override_sub_forgets_the_minus", kind=SIGN, source=OVERRIDE, fn=subtract,
    inputs=(normal(3), normal(3)), wrong_input="y",
    options={"override_map": {"Sub": "ZooGradSubForgetsMinus"}})


def add_row_bias(x, b):
    return x + b


bug(name="override_add_missing_broadcast_reduction", kind=BROADCAST, source=OVERRIDE,
    fn=add_row_bias, inputs=(normal(3, 4), normal(1, 4)), wrong_input="b",
    options={"override_map": {"AddV2": "ZooGradAddNoBroadcastReduction"}},
    fixed_options={"override_map": {"AddV2": "ZooGradAdd"}})


def elu(x):
    return tf.nn.elu(x)


bug(name="override_elu_negative_branch", kind=REGION, source=OVERRIDE, fn=elu, inputs=(MIXED,),
    wrong_input="x", wrong_elements=NEGATIVE_MIXED,
    options={"override_map": {"Elu": "ZooGradEluUsesOutput"}})


def complex_square(z):
    return tf.square(z)


bug(name="override_complex_square_missing_conj", kind=CONJUGATE, source=OVERRIDE, fn=complex_square,
    inputs=(complex_normal(3),), wrong_input="z",
    options={"override_map": {"Square": "ZooGradSquareNoConj"}},
    fixed_options={"override_map": {"Square": "ZooGradSquare"}})

SOFTPLUS_X = np.array([-1.5, 0.5, 3.0, 11.5, 13.0])  # exp overflows float16 above 11.09


def softplus(x):
    return tf.nn.softplus(x)


bug(name="override_softplus_float16_overflow", kind=FLOAT16, source=OVERRIDE, fn=softplus,
    inputs=(SOFTPLUS_X.astype(np.float16),), wrong_input="x", wrong_elements=elements("x", [3, 4]),
    options={"override_map": {"Softplus": "ZooGradSoftplusNaiveSigmoid"}},
    control_inputs=(SOFTPLUS_X.astype(np.float32),))


def sine(x):
    return tf.sin(x)


bug(name="override_sin_backward_dropout", kind=NONDETERMINISTIC, source=OVERRIDE, fn=sine,
    inputs=(normal(5),), wrong_input="x", options={"override_map": {"Sin": "ZooGradSinDropout"}})


def tanh(x):
    return tf.tanh(x)


bug(name="override_tanh_stop_gradient_second_order", kind=SECOND_ORDER, source=OVERRIDE, fn=tanh,
    inputs=(normal(3),), wrong_input="x",
    options={"override_map": {"Tanh": "ZooGradTanhStopGradient"}, "order": 2},
    fixed_options={"override_map": {"Tanh": "ZooGradTanh"}, "order": 2})

# ================================ Defun grad_func ================================
# Graph mode only (the default for a Defun).

F64 = tf.float64


@function.Defun(F64, F64)
def _square_grad_wrong_sign(x, dy):
    return -2.0 * x * dy


@function.Defun(F64, grad_func=_square_grad_wrong_sign)
def defun_square_wrong_sign(x):
    return x * x


@function.Defun(F64, F64)
def _square_grad(x, dy):
    return 2.0 * x * dy


@function.Defun(F64, grad_func=_square_grad)
def defun_square(x):
    return x * x


bug(name="defun_square_wrong_sign", kind=SIGN, source=DEFUN_GRAD, fn=defun_square_wrong_sign,
    inputs=(positive(4),), wrong_input="x", fixed=defun_square)


@function.Defun(F64, F64)
def _exp_grad_ignoring_upstream(x, dy):
    return tf.exp(x)


@function.Defun(F64, grad_func=_exp_grad_ignoring_upstream)
def defun_exp_ignores_upstream(x):
    return tf.exp(x)


bug(name="defun_exp_ignores_upstream", kind=IGNORES_UPSTREAM, source=DEFUN_GRAD,
    fn=defun_exp_ignores_upstream, inputs=(normal(3),), wrong_input="x")


@function.Defun(F64, F64)
def _x_exp_x_grad_missing_term(x, dy):
    return dy * x * tf.exp(x)  # + exp(x) is missing


@function.Defun(F64, grad_func=_x_exp_x_grad_missing_term)
def defun_x_exp_x(x):
    return x * tf.exp(x)


bug(name="defun_x_exp_x_missing_term", kind=MISSING_TERM, source=DEFUN_GRAD, fn=defun_x_exp_x,
    inputs=(normal(4),), wrong_input="x")

C128 = tf.complex128


@function.Defun(C128, C128)
def _complex_square_grad_no_conj(z, dy):
    return 2.0 * z * dy


@function.Defun(C128, grad_func=_complex_square_grad_no_conj)
def defun_complex_square_no_conj(z):
    return z * z


@function.Defun(C128, C128)
def _complex_square_grad(z, dy):
    return 2.0 * tf.math.conj(z) * dy


@function.Defun(C128, grad_func=_complex_square_grad)
def defun_complex_square(z):
    return z * z


bug(name="defun_complex_square_missing_conj", kind=CONJUGATE, source=DEFUN_GRAD,
    fn=defun_complex_square_no_conj, inputs=(complex_normal(3),), wrong_input="z",
    fixed=defun_complex_square)

HUBER_X = np.array([-2.5, -1.5, -0.5, 0.25, 0.75, 1.5, 2.5])


@function.Defun(F64, F64)
def _huber_grad_outer_branch(x, dy):
    return dy * tf.where(tf.abs(x) <= 1.0, x, tf.ones_like(x))  # sign(x), not 1


@function.Defun(F64, grad_func=_huber_grad_outer_branch)
def defun_huber(x):
    return tf.where(tf.abs(x) <= 1.0, 0.5 * x * x, tf.abs(x) - 0.5)


bug(name="defun_huber_negative_outer_branch", kind=REGION, source=DEFUN_GRAD, fn=defun_huber,
    inputs=(HUBER_X,), wrong_input="x", wrong_elements=elements("x", np.flatnonzero(HUBER_X < -1)))


@function.Defun(F64, F64, F64)
def _hypot_grad_copy_paste(x, y, dz):
    r = tf.sqrt(x * x + y * y)
    return dz * x / r, dz * x / r  # y's gradient is dz * y / r


@function.Defun(F64, F64, grad_func=_hypot_grad_copy_paste)
def defun_hypot(x, y):
    return tf.sqrt(x * x + y * y)


bug(name="defun_hypot_copy_paste", kind=SWAPPED, source=DEFUN_GRAD, fn=defun_hypot,
    inputs=(positive(3), positive(3) + 1.0), wrong_input="y")

# ============================= Defun python_grad_func =============================


def _sin_2x_grad_forgets_chain_factor(op, dy):
    return tf.cos(2.0 * op.inputs[0]) * dy  # the chain rule's 2 is missing


@function.Defun(F64, python_grad_func=_sin_2x_grad_forgets_chain_factor)
def defun_sin_2x(x):
    return tf.sin(2.0 * x)


def _sin_2x_grad(op, dy):
    return 2.0 * tf.cos(2.0 * op.inputs[0]) * dy


@function.Defun(F64, python_grad_func=_sin_2x_grad)
def defun_sin_2x_fixed(x):
    return tf.sin(2.0 * x)


bug(name="pydefun_sin_2x_forgets_chain_factor", kind=CONSTANT, source=DEFUN_PYTHON, fn=defun_sin_2x,
    inputs=(normal(4),), wrong_input="x", fixed=defun_sin_2x_fixed)


def _mul_grad_copy_paste(op, dz):
    y = op.inputs[1]
    return dz * y, dz * y


@function.Defun(F64, F64, python_grad_func=_mul_grad_copy_paste)
def defun_mul(x, y):
    return x * y


bug(name="pydefun_mul_copy_paste", kind=SWAPPED, source=DEFUN_PYTHON, fn=defun_mul,
    inputs=(normal(3), normal(3)), wrong_input="y")


def _mat_vec_grad_no_transpose(op, dy):
    a, x = op.inputs
    return dy[:, None] * x[None, :], tf.linalg.matvec(a, dy)  # A dy, not A^T dy


@function.Defun(F64, F64, python_grad_func=_mat_vec_grad_no_transpose)
def defun_mat_vec(a, x):
    return tf.linalg.matvec(a, x)


def _mat_vec_grad(op, dy):
    a, x = op.inputs
    return dy[:, None] * x[None, :], tf.linalg.matvec(a, dy, transpose_a=True)


@function.Defun(F64, F64, python_grad_func=_mat_vec_grad)
def defun_mat_vec_fixed(a, x):
    return tf.linalg.matvec(a, x)


bug(name="pydefun_mat_vec_transposed", kind=TRANSPOSED, source=DEFUN_PYTHON, fn=defun_mat_vec,
    inputs=(normal(3, 3), normal(3)), wrong_input="x", fixed=defun_mat_vec_fixed)


def _row_bias_grad_unreduced(op, dy):
    return dy, dy[:1]  # b is (1, m): its gradient must sum dy over the rows


@function.Defun(F64, F64, python_grad_func=_row_bias_grad_unreduced)
def defun_add_row_bias(x, b):
    return x + b


bug(name="pydefun_row_bias_missing_reduction", kind=BROADCAST, source=DEFUN_PYTHON,
    fn=defun_add_row_bias, inputs=(normal(3, 4), normal(1, 4)), wrong_input="b")


def _cube_grad_noisy(op, dy):
    x = op.inputs[0]
    return dy * 3.0 * x * x + tf.random.normal(tf.shape(x), stddev=1e-3, dtype=x.dtype)


@function.Defun(F64, python_grad_func=_cube_grad_noisy)
def defun_cube_noisy_gradient(x):
    return x * x * x


bug(name="pydefun_cube_additive_noise", kind=NONDETERMINISTIC, source=DEFUN_PYTHON,
    fn=defun_cube_noisy_gradient, inputs=(normal(4),), wrong_input="x")

def _cube_grad_frozen_input(op, dy):
    return dy * 3.0 * tf.square(tf.stop_gradient(op.inputs[0]))


@function.Defun(F64, python_grad_func=_cube_grad_frozen_input)
def defun_cube_frozen_gradient(x):
    return x * x * x


def _cube_grad(op, dy):
    return dy * 3.0 * tf.square(op.inputs[0])


@function.Defun(F64, python_grad_func=_cube_grad)
def defun_cube(x):
    return x * x * x


bug(name="pydefun_cube_stop_gradient_second_order", kind=SECOND_ORDER, source=DEFUN_PYTHON,
    fn=defun_cube_frozen_gradient, inputs=(positive(3),), wrong_input="x", options={"order": 2},
    fixed=defun_cube)

CLIP_X = np.array([-1.6, -0.7, 0.2, 0.9, 1.4])


def _square_grad_clipped(op, dy):
    return dy * tf.clip_by_value(2.0 * op.inputs[0], -2.0, 2.0)  # clipping left in


@function.Defun(F64, python_grad_func=_square_grad_clipped)
def defun_square_clipped_gradient(x):
    return x * x


bug(name="pydefun_square_clipped_gradient", kind=REGION, source=DEFUN_PYTHON,
    fn=defun_square_clipped_gradient, inputs=(CLIP_X,), wrong_input="x",
    wrong_elements=elements("x", np.flatnonzero(np.abs(CLIP_X) > 1)))

BY_NAME = {b.name: b for b in ZOO}
