"""The bug zoo's C++ ops (tests/bugzoo/ops/*.cc) and their Python gradients.

Every forward kernel is right. Each op name `ZooX` has its right gradient
registered under its own name; each `ZooXSomeBug` (the same kernel under another
op name) has a wrong gradient registered under its own name, as an op author
would ship it. Further gradients are registered under `ZooGrad...` names only, to
be swapped in with `override_map=` (for these ops and for TensorFlow's own).
"""
import pathlib

import tensorflow as tf

from gradcheck import build_op_library

HERE = pathlib.Path(__file__).parent
library = build_op_library(sorted((HERE / "ops").glob("*.cc")), name="bugzoo_ops")


def _cube_derivative(x):
    return 3.0 * x * x


# --- ZooCube: y = x^3 -------------------------------------------------------

@tf.RegisterGradient("ZooCube")
def _cube(op, grad):
    return grad * _cube_derivative(op.inputs[0])


@tf.RegisterGradient("ZooCubeNegated")
def _cube_negated(op, grad):
    return -grad * _cube_derivative(op.inputs[0])  # wrong sign


@tf.RegisterGradient("ZooCubeIgnoresUpstream")
def _cube_ignores_upstream(op, grad):
    return _cube_derivative(op.inputs[0])  # never multiplied by grad


@tf.RegisterGradient("ZooCubeHalfInt8")
def _cube_half_int8(op, grad):
    x = op.inputs[0]
    derivative = _cube_derivative(x)
    if x.dtype == tf.float16:
        # "int8 is enough for half": the derivative is truncated to an integer.
        derivative = tf.cast(tf.cast(derivative, tf.int8), tf.float16)
    return grad * derivative


@tf.RegisterGradient("ZooCubeEagerFastPath")
def _cube_eager_fast_path(op, grad):
    x = op.inputs[0]
    if tf.executing_eagerly():
        return grad * 3.0 * x  # the eager "fast path" forgets the square
    return grad * _cube_derivative(x)


@tf.RegisterGradient("ZooCubeStochasticRounding")
def _cube_stochastic_rounding(op, grad):
    """Unbiased stochastic rounding of the gradient to multiples of 1/64: right
    on average, different on every call, off by up to 1/64 each time."""
    exact = grad * _cube_derivative(op.inputs[0])
    noise = tf.random.uniform(tf.shape(exact), dtype=exact.dtype)
    return tf.floor(exact * 64.0 + noise) / 64.0


@tf.RegisterGradient("ZooCubeStopGradient")
def _cube_stop_gradient(op, grad):
    # Right value, but the second derivative through it is 0 instead of 6 x dy.
    return grad * _cube_derivative(tf.stop_gradient(op.inputs[0]))


# --- ZooLeakyRelu: y = x >= 0 ? x : 0.2 x -----------------------------------

def _leaky_relu_grad(x, grad, negative_slope):
    return grad * tf.where(x >= 0, tf.ones_like(x), negative_slope * tf.ones_like(x))


@tf.RegisterGradient("ZooLeakyRelu")
def _leaky_relu(op, grad):
    return _leaky_relu_grad(op.inputs[0], grad, 0.2)


@tf.RegisterGradient("ZooLeakyReluWrongNegativeSlope")
def _leaky_relu_wrong_negative_slope(op, grad):
    return _leaky_relu_grad(op.inputs[0], grad, 0.02)  # typo in the x < 0 branch only


# --- ZooMul: z = x * y --------------------------------------------------------

@tf.RegisterGradient("ZooMul")
def _mul(op, grad):
    x, y = op.inputs
    return [grad * y, grad * x]


@tf.RegisterGradient("ZooMulCopyPaste")
def _mul_copy_paste(op, grad):
    y = op.inputs[1]
    return [grad * y, grad * y]  # the second line was copied from the first


@tf.RegisterGradient("ZooGradMulIgnoresUpstream")
def _mul_ignores_upstream(op, grad):
    x, y = op.inputs
    return [y, x]


# --- ZooScale: y = a * x, a a scalar --------------------------------------------

@tf.RegisterGradient("ZooScale")
def _scale(op, grad):
    x, a = op.inputs
    return [grad * a, tf.reduce_sum(grad * x)]


@tf.RegisterGradient("ZooScaleScalarPath")
def _scale_scalar_path(op, grad):
    x, a = op.inputs
    if x.shape.rank == 0:  # a "fast path" for scalars that forgets a
        return [grad, grad * x]
    return [grad * a, tf.reduce_sum(grad * x)]


@tf.RegisterGradient("ZooScaleForgetsA")
def _scale_forgets_a(op, grad):
    return [grad * op.inputs[1], None]  # "a is a constant" (it is not: a variable)


# --- ZooMatVec: y = A x ---------------------------------------------------------

@tf.RegisterGradient("ZooMatVec")
def _mat_vec(op, grad):
    a, x = op.inputs
    return [grad[:, None] * x[None, :], tf.linalg.matvec(a, grad, transpose_a=True)]


@tf.RegisterGradient("ZooMatVecNoTranspose")
def _mat_vec_no_transpose(op, grad):
    a, x = op.inputs
    return [grad[:, None] * x[None, :], tf.linalg.matvec(a, grad)]  # A dy, not A^T dy


# --- ZooBiasAdd: y = x + b, b broadcast over the rows -----------------------------

@tf.RegisterGradient("ZooBiasAdd")
def _bias_add(op, grad):
    return [grad, tf.reduce_sum(grad, axis=0)]


@tf.RegisterGradient("ZooBiasAddFirstRow")
def _bias_add_first_row(op, grad):
    return [grad, grad[0]]  # the shape fits, but the rows are never summed


# --- ZooCSquare: y = z^2, complex -------------------------------------------------

@tf.RegisterGradient("ZooCSquare")
def _c_square(op, grad):
    return grad * 2.0 * tf.math.conj(op.inputs[0])


@tf.RegisterGradient("ZooCSquareNoConj")
def _c_square_no_conj(op, grad):
    return grad * 2.0 * op.inputs[0]  # TensorFlow's convention needs conj(f'(z))


# --- Gradients for TensorFlow's own ops, for override_map= --------------------------

@tf.RegisterGradient("ZooGradMatMulNoTranspose")
def _matmul_no_transpose(op, grad):
    a, b = op.inputs
    return [tf.matmul(grad, b, transpose_b=True), tf.matmul(a, grad)]  # A dy, not A^T dy


@tf.RegisterGradient("ZooGradMatMul")
def _matmul(op, grad):
    a, b = op.inputs
    return [tf.matmul(grad, b, transpose_b=True), tf.matmul(a, grad, transpose_a=True)]


@tf.RegisterGradient("ZooGradSquareForgetsTheTwo")
def _square_forgets_the_two(op, grad):
    return grad * op.inputs[0]


@tf.RegisterGradient("ZooGradSquareNoConj")
def _square_no_conj(op, grad):
    return grad * 2.0 * op.inputs[0]  # right for reals, missing conj for complex


@tf.RegisterGradient("ZooGradSquare")
def _square(op, grad):
    return grad * 2.0 * tf.math.conj(op.inputs[0])


@tf.RegisterGradient("ZooGradMulOnlyFirst")
def _mul_only_first(op, grad):
    """Half a product rule: the gradient flows to the first factor only."""
    y = op.inputs[1]
    return [grad * y, None]


@tf.RegisterGradient("ZooGradSubForgetsMinus")
def _sub_forgets_minus(op, grad):
    return [grad, grad]


@tf.RegisterGradient("ZooGradAddNoBroadcastReduction")
def _add_no_broadcast_reduction(op, grad):
    """For x (n, m) + b (1, m): b's gradient keeps only the first row."""
    return [grad, grad[:1]]


@tf.RegisterGradient("ZooGradAdd")
def _add(op, grad):
    return [grad, tf.reduce_sum(grad, axis=0, keepdims=True)]


@tf.RegisterGradient("ZooGradEluUsesOutput")
def _elu_uses_output(op, grad):
    y = op.outputs[0]
    return tf.where(y > 0, grad, grad * y)  # for x < 0, d elu/dx = exp(x) = y + 1, not y


@tf.RegisterGradient("ZooGradSoftplusNaiveSigmoid")
def _softplus_naive_sigmoid(op, grad):
    e = tf.exp(op.inputs[0])  # overflows to inf in float16 for x > 11: inf / inf = nan
    return grad * e / (1.0 + e)


@tf.RegisterGradient("ZooGradSinDropout")
def _sin_dropout(op, grad):
    """Dropout in the backward pass only, rescaled: unbiased, and random."""
    keep = tf.cast(tf.random.uniform(tf.shape(grad), dtype=grad.dtype) >= 0.25, grad.dtype)
    return grad * tf.cos(op.inputs[0]) * keep / 0.75


@tf.RegisterGradient("ZooGradTanhStopGradient")
def _tanh_stop_gradient(op, grad):
    y = tf.stop_gradient(op.outputs[0])  # right value, no second derivative through y
    return grad * (1.0 - y * y)


@tf.RegisterGradient("ZooGradTanh")
def _tanh(op, grad):
    y = op.outputs[0]
    return grad * (1.0 - y * y)


zoo_cube = library.zoo_cube
zoo_cube_negated = library.zoo_cube_negated
zoo_cube_ignores_upstream = library.zoo_cube_ignores_upstream
zoo_cube_half_int8 = library.zoo_cube_half_int8
zoo_cube_eager_fast_path = library.zoo_cube_eager_fast_path
zoo_cube_stochastic_rounding = library.zoo_cube_stochastic_rounding
zoo_cube_stop_gradient = library.zoo_cube_stop_gradient
zoo_leaky_relu = library.zoo_leaky_relu
zoo_leaky_relu_wrong_negative_slope = library.zoo_leaky_relu_wrong_negative_slope
zoo_mul = library.zoo_mul
zoo_mul_copy_paste = library.zoo_mul_copy_paste
zoo_scale = library.zoo_scale
zoo_scale_scalar_path = library.zoo_scale_scalar_path
zoo_scale_forgets_a = library.zoo_scale_forgets_a
zoo_mat_vec = library.zoo_mat_vec
zoo_mat_vec_no_transpose = library.zoo_mat_vec_no_transpose
zoo_bias_add = library.zoo_bias_add
zoo_bias_add_first_row = library.zoo_bias_add_first_row
zoo_c_square = library.zoo_c_square
zoo_c_square_no_conj = library.zoo_c_square_no_conj
