"""The corpus: TensorFlow ops whose registered gradients gradcheck must pass.

Each entry names the op, the domain its inputs need (away from poles, kinks and
ties), the dtypes TensorFlow has CPU kernels for, and the modes it runs in.
Shapes and values are drawn by Hypothesis; `run.py` checks them.
"""
import dataclasses

import numpy as np
import tensorflow as tf
from hypothesis import strategies as st

from gradcheck import strategies as gs

ALL_MODES = ("eager", "function", "graph", "xla")
NO_XLA = ("eager", "function", "graph")
FLOATS = ("float16", "bfloat16", "float32", "float64")
WIDE = ("float32", "float64")
HALF_AND_WIDE = ("float16", "float32", "float64")
COMPLEX = ("complex64", "complex128")

ELEMENTWISE = gs.shapes(min_rank=0, max_rank=2, max_side=4, max_size=12)
NONEMPTY = gs.shapes(min_rank=1, max_rank=2, min_side=1, max_side=4, max_size=12)
MATRIX = gs.shapes(min_rank=2, max_rank=2, min_side=1, max_side=4)


WIDE_RANGE = gs.interval(-2.0, 2.0)


@dataclasses.dataclass(frozen=True)
class T:
    """A differentiable argument in the op's dtype."""

    shape: object  # a tuple, or a strategy of tuples
    domain: gs.Domain = WIDE_RANGE
    distinct: bool = False
    dtype: str = ""  # a fixed dtype, for arguments that do not follow the op's

    def strategy(self, dtype):
        return gs.tensors(self.dtype or dtype, self.shape, self.domain, distinct=self.distinct)


@dataclasses.dataclass(frozen=True)
class Op:
    name: str
    family: str
    fn: object
    args: tuple  # T specs and plain values; or a function dtype -> strategy of the argument list
    dtypes: tuple = FLOATS
    modes: tuple = ALL_MODES
    defect: str = ""  # a TensorFlow gradient defect, with the evidence: the case is a strict xfail

    def arguments(self, dtype):
        if callable(self.args):
            return self.args(dtype)
        parts = [a.strategy(dtype) if isinstance(a, T) else st.just(a) for a in self.args]
        return st.tuples(*parts).map(list)


def same_shape(*domains, shape=ELEMENTWISE, distinct=False):
    """Arguments that share one drawn shape."""
    def arguments(dtype):
        return shape.flatmap(lambda s: st.tuples(
            *[gs.tensors(dtype, s, d, distinct=distinct) for d in domains]).map(list))
    return arguments


def broadcast(*domains):
    """Arguments of shapes that broadcast together: their gradients must be summed back."""
    def arguments(dtype):
        shapes = gs.broadcastable_shapes(len(domains), max_rank=2, max_side=3)
        return shapes.flatmap(lambda group: st.tuples(
            *[gs.tensors(dtype, s, d) for s, d in zip(group, domains)]).map(list))
    return arguments


A = gs.interval(-2.0, 2.0)
POSITIVE = gs.positive(0.2, 3.0)
NONZERO = gs.nonzero(-2.0, 2.0, margin=0.2)
UNIT = gs.interval(-0.9, 0.9)
PROB = gs.interval(0.05, 0.95)
AWAY_FROM_INTEGERS = gs.interval(-2.0, 2.0, avoid=(-2.0, -1.0, 0.0, 1.0, 2.0), margin=0.1)
WELL = gs.well_conditioned()


def e(name, fn, domain=A, dtypes=FLOATS, modes=ALL_MODES, family="math", **extra):
    """An elementwise unary op on a drawn shape."""
    return Op(name, family, fn, (T(ELEMENTWISE, domain),), dtypes, modes, **extra)


def spd(x):
    """A symmetric positive definite matrix from any square one."""
    n = x.shape[-1]
    return tf.matmul(x, x, transpose_b=True) + n * tf.eye(n, dtype=x.dtype)


MATH = [
    e("abs", tf.abs, NONZERO),
    e("acos", tf.acos, UNIT),
    e("acosh", tf.acosh, gs.interval(1.2, 3.0)),
    e("asin", tf.asin, UNIT),
    e("asinh", tf.asinh),
    e("atan", tf.atan),
    e("atanh", tf.atanh, UNIT),
    e("cos", tf.cos),
    e("cosh", tf.cosh),
    e("sin", tf.sin),
    e("sinh", tf.sinh),
    e("tan", tf.tan, gs.interval(-1.2, 1.2)),
    e("tanh", tf.tanh),
    e("exp", tf.exp),
    e("expm1", tf.math.expm1),
    e("log", tf.math.log, POSITIVE),
    e("log1p", tf.math.log1p, gs.interval(-0.8, 2.0)),
    e("sqrt", tf.sqrt, POSITIVE),
    e("rsqrt", tf.math.rsqrt, POSITIVE),
    e("reciprocal", tf.math.reciprocal, NONZERO),
    e("square", tf.square),
    e("negative", tf.negative),
    e("sigmoid", tf.sigmoid),
    e("log_sigmoid", tf.math.log_sigmoid),
    e("softplus", tf.math.softplus),
    e("softsign", tf.math.softsign),
    e("erf", tf.math.erf),
    e("erfc", tf.math.erfc),
    e("erfinv", tf.math.erfinv, UNIT, dtypes=WIDE),
    e("ndtri", tf.math.ndtri, PROB, dtypes=WIDE),
    e("lgamma", tf.math.lgamma, POSITIVE, dtypes=HALF_AND_WIDE),
    e("digamma", tf.math.digamma, POSITIVE, dtypes=WIDE),
    e("digamma, float16", tf.math.digamma, POSITIVE, dtypes=("float16",),
      defect="digamma has a float16 kernel but its gradient calls Polygamma, which has none: "
             "'Value for attr 'T' of half is not in the list of allowed values: float, double'"),
    e("bessel_i0e", tf.math.bessel_i0e, dtypes=HALF_AND_WIDE),
    e("bessel_i1e", tf.math.bessel_i1e, dtypes=HALF_AND_WIDE),
    e("floor", tf.floor, AWAY_FROM_INTEGERS),
    e("round", tf.round, gs.interval(-2.0, 2.0, avoid=(-1.5, -0.5, 0.5, 1.5), margin=0.1)),
    e("sign", tf.sign, NONZERO),
    e("pow, integer exponent", lambda x: x ** 3),
    Op("add", "math", tf.add, broadcast(A, A)),
    Op("subtract", "math", tf.subtract, broadcast(A, A)),
    Op("multiply", "math", tf.multiply, broadcast(A, A)),
    Op("divide", "math", tf.divide, broadcast(A, NONZERO)),
    Op("pow", "math", tf.pow, broadcast(POSITIVE, A)),
    Op("maximum", "math", tf.maximum, same_shape(A, A, distinct=True)),
    Op("minimum", "math", tf.minimum, same_shape(A, A, distinct=True)),
    Op("squared_difference", "math", tf.math.squared_difference, broadcast(A, A)),
    Op("atan2", "math", tf.atan2, same_shape(NONZERO, NONZERO)),
    Op("divide_no_nan", "math", tf.math.divide_no_nan, same_shape(A, NONZERO)),
    Op("multiply_no_nan", "math", tf.math.multiply_no_nan, same_shape(A, NONZERO)),
    Op("xlogy", "math", tf.math.xlogy, same_shape(NONZERO, POSITIVE), dtypes=HALF_AND_WIDE),
    Op("xlog1py", "math", tf.math.xlog1py, same_shape(NONZERO, POSITIVE), dtypes=HALF_AND_WIDE),
    Op("xdivy", "math", tf.math.xdivy, same_shape(NONZERO, NONZERO), dtypes=HALF_AND_WIDE),
    Op("floormod", "math", tf.math.floormod,
       same_shape(gs.interval(0.1, 0.9), gs.interval(1.1, 2.0)), dtypes=WIDE),
    Op("igammac in x", "math", lambda x: tf.math.igammac(tf.constant(2.5, x.dtype), x),
       (T(ELEMENTWISE, POSITIVE),), dtypes=WIDE),
    Op("betainc in x", "math",
       lambda x: tf.math.betainc(tf.constant(2.0, x.dtype), tf.constant(3.0, x.dtype), x),
       (T(ELEMENTWISE, PROB),), dtypes=WIDE, modes=NO_XLA),
    Op("polygamma in x", "math", lambda x: tf.math.polygamma(tf.constant(1.0, x.dtype), x),
       (T(ELEMENTWISE, POSITIVE),), dtypes=WIDE),
    Op("zeta in x", "math", lambda x: tf.math.zeta(tf.constant(3.0, x.dtype), x),
       (T(ELEMENTWISE, POSITIVE),), dtypes=WIDE),
    Op("clip_by_value", "math", lambda x: tf.clip_by_value(x, -1.0, 1.0),
       (T(ELEMENTWISE, gs.interval(-2, 2, avoid=(-1.0, 1.0), margin=0.1)),)),
    Op("add_n", "math", lambda x, y, z: tf.add_n([x, y * 2.0, z]), same_shape(A, A, A)),
]

REDUCTIONS = [
    Op("reduce_sum", "reduction", lambda x: tf.reduce_sum(x, axis=-1), (T(NONEMPTY),)),
    Op("reduce_sum, all axes", "reduction", tf.reduce_sum, (T(ELEMENTWISE),)),
    Op("reduce_mean", "reduction", lambda x: tf.reduce_mean(x, axis=0), (T(NONEMPTY),)),
    Op("reduce_prod", "reduction", lambda x: tf.reduce_prod(x, axis=-1),
       (T(NONEMPTY, NONZERO),), dtypes=HALF_AND_WIDE),
    Op("reduce_max", "reduction", lambda x: tf.reduce_max(x, axis=-1),
       (T(NONEMPTY, distinct=True),)),
    Op("reduce_min", "reduction", lambda x: tf.reduce_min(x, axis=0),
       (T(NONEMPTY, distinct=True),)),
    Op("reduce_logsumexp", "reduction", lambda x: tf.reduce_logsumexp(x, axis=-1), (T(NONEMPTY),)),
    Op("reduce_std", "reduction", lambda x: tf.math.reduce_std(x, axis=-1),
       (T((3, 4), distinct=True),)),
    Op("reduce_variance", "reduction", lambda x: tf.math.reduce_variance(x, axis=0),
       (T(NONEMPTY),)),
    Op("reduce_euclidean_norm", "reduction", lambda x: tf.math.reduce_euclidean_norm(x, axis=-1),
       (T(NONEMPTY, NONZERO),), modes=NO_XLA),
    Op("norm, ord 2", "reduction", lambda x: tf.norm(x, axis=-1), (T(NONEMPTY, NONZERO),)),
    Op("cumsum", "reduction", lambda x: tf.cumsum(x, axis=-1), (T(NONEMPTY),)),
    Op("cumsum, exclusive reverse", "reduction",
       lambda x: tf.cumsum(x, axis=0, exclusive=True, reverse=True), (T(NONEMPTY),)),
    Op("cumprod", "reduction", lambda x: tf.math.cumprod(x, axis=-1),
       (T(NONEMPTY, NONZERO),), dtypes=HALF_AND_WIDE),
    Op("cumulative_logsumexp", "reduction", lambda x: tf.math.cumulative_logsumexp(x, axis=-1),
       (T(NONEMPTY),), dtypes=HALF_AND_WIDE),
    Op("l2_normalize", "reduction", lambda x: tf.math.l2_normalize(x, axis=-1),
       (T(NONEMPTY, NONZERO),)),
    Op("moments", "reduction", lambda x: tf.nn.moments(x, axes=[0]), (T((4, 3)),)),
]


def conv_input(shape, filters):
    return (T(shape), T(filters))


NN = [
    e("relu", tf.nn.relu, NONZERO, family="nn"),
    e("relu6", tf.nn.relu6, gs.interval(-2, 8, avoid=(0.0, 6.0), margin=0.1), family="nn"),
    e("elu", tf.nn.elu, NONZERO, family="nn"),
    e("selu", tf.nn.selu, NONZERO, family="nn"),
    e("gelu", tf.nn.gelu, family="nn"),
    e("gelu, approximate", lambda x: tf.nn.gelu(x, approximate=True), family="nn"),
    e("leaky_relu", lambda x: tf.nn.leaky_relu(x, 0.1), NONZERO, family="nn"),
    e("silu", tf.nn.silu, family="nn"),
    Op("softmax", "nn", tf.nn.softmax, (T(NONEMPTY),)),
    Op("log_softmax", "nn", tf.nn.log_softmax, (T(NONEMPTY),)),
    Op("crelu", "nn", tf.nn.crelu, (T((2, 3), NONZERO),)),
    Op("bias_add", "nn", tf.nn.bias_add, (T((2, 3)), T((3,)))),
    Op("l2_loss", "nn", tf.nn.l2_loss, (T(ELEMENTWISE),)),
    # Labels must be distributions (rows summing to 1): the gradient assumes it.
    Op("softmax_cross_entropy_with_logits", "nn",
       lambda logits, labels: tf.nn.softmax_cross_entropy_with_logits(
           labels / tf.reduce_sum(labels, axis=-1, keepdims=True), logits),
       (T((2, 4)), T((2, 4), PROB)), dtypes=HALF_AND_WIDE),
    Op("sparse_softmax_cross_entropy_with_logits", "nn",
       lambda logits, labels: tf.nn.sparse_softmax_cross_entropy_with_logits(labels, logits),
       (T((3, 4)), np.array([0, 3, 1], np.int32)), dtypes=HALF_AND_WIDE),
    Op("sigmoid_cross_entropy_with_logits", "nn",
       lambda logits, labels: tf.nn.sigmoid_cross_entropy_with_logits(labels, logits),
       (T((2, 3), NONZERO), T((2, 3), PROB))),
    Op("weighted_cross_entropy_with_logits", "nn",
       lambda logits, labels: tf.nn.weighted_cross_entropy_with_logits(labels, logits, 2.0),
       (T((2, 3), NONZERO), T((2, 3), PROB))),
    Op("log_poisson_loss", "nn",
       lambda log_input, targets: tf.nn.log_poisson_loss(targets, log_input),
       (T((2, 3)), T((2, 3), POSITIVE))),
    Op("conv1d", "nn", lambda x, w: tf.nn.conv1d(x, w, stride=1, padding="SAME"),
       conv_input((1, 5, 2), (3, 2, 2)), dtypes=HALF_AND_WIDE),
    Op("conv2d", "nn", lambda x, w: tf.nn.conv2d(x, w, strides=1, padding="VALID"),
       conv_input((1, 4, 4, 2), (2, 2, 2, 3)), dtypes=HALF_AND_WIDE),
    Op("conv2d, strided same", "nn", lambda x, w: tf.nn.conv2d(x, w, strides=2, padding="SAME"),
       conv_input((2, 5, 5, 1), (3, 3, 1, 2)), dtypes=HALF_AND_WIDE),
    Op("atrous_conv2d", "nn", lambda x, w: tf.nn.atrous_conv2d(x, w, rate=2, padding="VALID"),
       conv_input((1, 5, 5, 1), (2, 2, 1, 2)), dtypes=HALF_AND_WIDE),
    Op("depthwise_conv2d", "nn",
       lambda x, w: tf.nn.depthwise_conv2d(x, w, strides=[1, 1, 1, 1], padding="VALID"),
       conv_input((1, 4, 4, 2), (2, 2, 2, 2)), dtypes=HALF_AND_WIDE),
    Op("conv2d_transpose", "nn",
       lambda x, w: tf.nn.conv2d_transpose(x, w, [1, 6, 6, 2], strides=2, padding="SAME"),
       conv_input((1, 3, 3, 3), (3, 3, 2, 3)), dtypes=HALF_AND_WIDE),
    Op("conv3d", "nn", lambda x, w: tf.nn.conv3d(x, w, strides=[1] * 5, padding="VALID"),
       conv_input((1, 3, 3, 3, 1), (2, 2, 2, 1, 2)), dtypes=HALF_AND_WIDE),
    Op("avg_pool2d", "nn", lambda x: tf.nn.avg_pool2d(x, 2, 2, "VALID"),
       (T((1, 4, 4, 2)),), dtypes=HALF_AND_WIDE),
    Op("max_pool2d", "nn", lambda x: tf.nn.max_pool2d(x, 2, 2, "VALID"),
       (T((1, 4, 4, 1), distinct=True),)),
    Op("max_pool1d, overlapping", "nn", lambda x: tf.nn.max_pool1d(x, 3, 1, "SAME"),
       (T((1, 6, 1), distinct=True),)),
    Op("avg_pool3d", "nn", lambda x: tf.nn.avg_pool3d(x, 2, 1, "VALID"),
       (T((1, 3, 3, 3, 1)),), dtypes=WIDE[:1]),
    Op("batch_normalization", "nn",
       lambda x, mean, var, offset, scale: tf.nn.batch_normalization(x, mean, var, offset, scale, 1e-3),
       (T((4, 3)), T((3,)), T((3,), POSITIVE), T((3,)), T((3,)))),
    Op("fused_batch_norm, training", "nn",
       lambda x, scale, offset: tf.compat.v1.nn.fused_batch_norm(x, scale, offset, is_training=True)[0],
       (T((2, 2, 2, 3), distinct=True), T((3,), dtype="float32"), T((3,), dtype="float32")),
       dtypes=("float32",)),
    Op("local_response_normalization", "nn",
       lambda x: tf.nn.local_response_normalization(x, depth_radius=1),
       (T((1, 2, 2, 4)),), dtypes=("float32",), modes=NO_XLA),
    Op("embedding_lookup", "nn",
       lambda params, ids: tf.nn.embedding_lookup(params, ids), (T((5, 2)), np.array([4, 0, 4, 2]))),
]

LINALG = [
    Op("matmul", "linalg", tf.matmul, (T((3, 4)), T((4, 2)))),
    Op("matmul, transposed", "linalg", lambda a, b: tf.matmul(a, b, transpose_a=True, transpose_b=True),
       (T((4, 3)), T((2, 4)))),
    Op("batch matmul, broadcast batch", "linalg", tf.matmul, (T((2, 3, 2)), T((1, 2, 3)))),
    Op("matvec", "linalg", tf.linalg.matvec, (T((3, 4)), T((4,)))),
    Op("einsum, contraction", "linalg", lambda a, b: tf.einsum("ij,jk->ik", a, b),
       (T((2, 3)), T((3, 2)))),
    Op("einsum, batched outer", "linalg", lambda a, b: tf.einsum("bi,bj->bij", a, b),
       (T((2, 3)), T((2, 2)))),
    Op("tensordot", "linalg", lambda a, b: tf.tensordot(a, b, axes=[[1, 2], [0, 1]]),
       (T((2, 3, 2)), T((3, 2, 2)))),
    Op("trace", "linalg", tf.linalg.trace, (T(MATRIX),)),
    Op("diag_part", "linalg", tf.linalg.diag_part, (T(MATRIX),)),
    Op("diag", "linalg", tf.linalg.diag, (T(NONEMPTY),)),
    Op("set_diag", "linalg", tf.linalg.set_diag, (T((3, 3)), T((3,)))),
    Op("band_part", "linalg", lambda x: tf.linalg.band_part(x, 1, 0), (T((4, 4)),)),
    Op("matrix_transpose", "linalg", tf.linalg.matrix_transpose, (T((2, 3, 4)),)),
    Op("cross", "linalg", tf.linalg.cross, (T((2, 3)), T((2, 3)))),
    Op("inv", "linalg", tf.linalg.inv, (T((3, 3), WELL),), dtypes=WIDE),
    Op("det", "linalg", tf.linalg.det, (T((3, 3), WELL),), dtypes=WIDE, modes=NO_XLA),
    Op("slogdet", "linalg", lambda x: tf.linalg.slogdet(x)[1], (T((3, 3), WELL),), dtypes=WIDE,
       modes=NO_XLA),
    Op("logdet", "linalg", lambda x: tf.linalg.logdet(spd(x)), (T((3, 3)),), dtypes=WIDE),
    Op("cholesky", "linalg", lambda x: tf.linalg.cholesky(spd(x)), (T((3, 3)),), dtypes=WIDE),
    Op("cholesky_solve", "linalg",
       lambda x, b: tf.linalg.cholesky_solve(tf.linalg.cholesky(spd(x)), b),
       (T((3, 3)), T((3, 2))), dtypes=WIDE),
    Op("solve", "linalg", tf.linalg.solve, (T((3, 3), WELL), T((3, 2))), dtypes=WIDE),
    Op("triangular_solve", "linalg",
       lambda a, b: tf.linalg.triangular_solve(tf.linalg.band_part(a, -1, 0), b),
       (T((3, 3), WELL), T((3, 2))), dtypes=WIDE),
    Op("lstsq", "linalg", lambda a, b: tf.linalg.lstsq(a + 3.0 * tf.eye(4, 3, dtype=a.dtype), b),
       (T((4, 3)), T((4, 2))),
       dtypes=WIDE, modes=NO_XLA),
    # Householder QR is not differentiable where a column below the diagonal is
    # zero (its reflection flips sign): distinct values keep away from that.
    Op("qr", "linalg", lambda x: tf.linalg.qr(x), (T((3, 3), WELL, distinct=True),), dtypes=WIDE),
    Op("eigh", "linalg", lambda x: tf.linalg.eigh(x + tf.linalg.matrix_transpose(x))[0],
       (T((3, 3), distinct=True),), dtypes=WIDE, modes=NO_XLA),
    Op("eigh, xla", "linalg", lambda x: tf.linalg.eigh(x + tf.linalg.matrix_transpose(x))[0],
       (T((3, 3), distinct=True),), dtypes=("float32",), modes=("xla",)),
    Op("eigh, xla, float64", "linalg",
       lambda x: tf.linalg.eigh(x + tf.linalg.matrix_transpose(x))[0],
       (np.array([[-0.5, -1.0, 0.5], [0.875, 0.75, 0.0], [0.125, 0.25, 1.0]]),),
       dtypes=("float64",), modes=("xla",),
       defect="XLA's float64 eigh (an iterative Jacobi solver) is accurate to about 1e-7, not "
              "float64's 1e-15: at this matrix 10 of 27 gradient entries are off by up to "
              "4.5e-8 (7.7e-7 relative) from LAPACK's, which eager, function and graph modes use"),
    Op("svd, singular values", "linalg", lambda x: tf.linalg.svd(x, compute_uv=False),
       (T((3, 2), distinct=True),), dtypes=WIDE),
    # float64 only: with oneDNN on, tf.vectorized_map of the float32 gradient
    # aborts the process on some CPUs (the defect list in docs/tensorflow-modes.md).
    Op("expm", "linalg", tf.linalg.expm, (T((3, 3), gs.interval(-0.5, 0.5)),),
       dtypes=("float64",), modes=NO_XLA),
    Op("expm, xla", "linalg", tf.linalg.expm, (T((3, 3), gs.interval(-0.5, 0.5)),),
       dtypes=("float64",), modes=("xla",),
       defect="the gradient of expm cannot be compiled by XLA: 'XLA compilation requires a "
              "fixed tensor list size' (its while loop has no maximum_iterations)"),
    Op("pinv", "linalg", tf.linalg.pinv, (T((3, 2), distinct=True),), dtypes=WIDE),
    Op("sqrtm", "linalg", lambda x: tf.linalg.sqrtm(spd(x)), (T((3, 3)),), dtypes=WIDE,
       modes=NO_XLA),
    Op("tridiagonal_solve", "linalg",
       lambda d, b: tf.linalg.tridiagonal_solve(d, b),
       (T((3, 4), gs.interval(3.0, 4.0)), T((4, 2))), dtypes=WIDE, modes=NO_XLA),
    Op("norm, frobenius", "linalg", lambda x: tf.norm(x, ord="fro", axis=[-2, -1]),
       (T((3, 3), NONZERO),)),
]

INDICES = np.array([2, 0, 2, 1], np.int32)
SEGMENTS = np.array([0, 0, 1, 3], np.int32)

ARRAY = [
    Op("reshape", "array", lambda x: tf.reshape(x, [-1]), (T(ELEMENTWISE),)),
    Op("transpose", "array", lambda x: tf.transpose(x, [1, 2, 0]), (T((2, 3, 2)),)),
    Op("concat", "array", lambda x, y: tf.concat([x, y], axis=0), (T((2, 3)), T((1, 3)))),
    Op("stack", "array", lambda x, y: tf.stack([x, y], axis=1), same_shape(A, A, shape=NONEMPTY)),
    Op("unstack", "array", tf.unstack, (T((3, 2)),)),
    Op("split", "array", lambda x: tf.split(x, [1, 3], axis=1), (T((2, 4)),)),
    Op("tile", "array", lambda x: tf.tile(x, [2, 1]), (T(MATRIX),)),
    Op("pad, constant", "array", lambda x: tf.pad(x, [[1, 0], [0, 2]]), (T(MATRIX),)),
    Op("pad, reflect", "array", lambda x: tf.pad(x, [[1, 1], [1, 0]], mode="REFLECT"),
       (T((3, 3)),)),
    Op("pad, symmetric", "array", lambda x: tf.pad(x, [[1, 1], [0, 2]], mode="SYMMETRIC"),
       (T((3, 3)),)),
    Op("slice", "array", lambda x: tf.slice(x, [1, 0], [2, 2]), (T((3, 3)),)),
    Op("strided_slice", "array", lambda x: x[::2, 1:], (T((4, 3)),)),
    Op("strided_slice, negative stride", "array", lambda x: x[::-2, tf.newaxis], (T((5,)),)),
    Op("reverse", "array", lambda x: tf.reverse(x, [0]), (T(NONEMPTY),)),
    Op("roll", "array", lambda x: tf.roll(x, 1, axis=0), (T(NONEMPTY),)),
    Op("gather", "array", lambda x, i: tf.gather(x, i), (T((3, 2)), INDICES)),
    Op("gather, batch_dims", "array", lambda x, i: tf.gather(x, i, batch_dims=1),
       (T((2, 3)), np.array([[2, 0], [1, 1]], np.int32))),
    Op("gather_nd", "array", lambda x, i: tf.gather_nd(x, i),
       (T((3, 3)), np.array([[0, 1], [2, 2], [0, 1]], np.int32))),
    Op("scatter_nd", "array", lambda u, i: tf.scatter_nd(i, u, [4, 2]),
       (T((3, 2)), np.array([[1], [3], [1]], np.int32))),
    Op("tensor_scatter_nd_update", "array",
       lambda x, u, i: tf.tensor_scatter_nd_update(x, i, u),
       (T((4, 2)), T((2, 2)), np.array([[0], [2]], np.int32))),
    Op("tensor_scatter_nd_add", "array", lambda x, u, i: tf.tensor_scatter_nd_add(x, i, u),
       (T((4, 2)), T((3, 2)), np.array([[0], [2], [0]], np.int32))),
    Op("boolean_mask", "array", lambda x, m: tf.boolean_mask(x, m),
       (T((4, 2)), np.array([True, False, True, True])), modes=NO_XLA),
    Op("boolean_mask, xla", "array", lambda x, m: tf.boolean_mask(x, m),
       (T((4, 2)), np.array([True, False, True, True])), dtypes=("float64",), modes=("xla",),
       defect="under XLA the gradient raises 'Input to reshape is a tensor with 6 values, but "
              "the requested shape has 8' (plain tf.function(jit_compile=True) of "
              "GradientTape.gradient, no gradcheck involved)"),
    Op("where, select", "array", lambda c, x, y: tf.where(c, x, y),
       (np.array([[True, False], [False, True]]), T((2, 2)), T((2, 2)))),
    Op("expand_dims", "array", lambda x: tf.expand_dims(x, 0), (T(ELEMENTWISE),)),
    Op("squeeze", "array", lambda x: tf.squeeze(x, axis=1), (T((3, 1)),)),
    Op("broadcast_to", "array", lambda x: tf.broadcast_to(x, [3, 2, 2]), (T((2, 1)),)),
    Op("repeat", "array", lambda x: tf.repeat(x, [1, 0, 2], axis=0), (T((3, 2)),)),
    Op("space_to_depth", "array", lambda x: tf.nn.space_to_depth(x, 2), (T((1, 2, 4, 1)),)),
    Op("depth_to_space", "array", lambda x: tf.nn.depth_to_space(x, 2), (T((1, 1, 2, 4)),)),
    Op("space_to_batch", "array", lambda x: tf.space_to_batch(x, [2], [[0, 0]]), (T((1, 4, 2)),)),
    Op("batch_to_space", "array", lambda x: tf.batch_to_space(x, [2], [[0, 0]]), (T((2, 2, 1)),)),
    Op("reverse_sequence", "array",
       lambda x: tf.reverse_sequence(x, [2, 3], seq_axis=1, batch_axis=0), (T((2, 3)),)),
    Op("sort", "array", lambda x: tf.sort(x, axis=-1), (T(NONEMPTY, distinct=True),),
       dtypes=HALF_AND_WIDE),
    Op("top_k values", "array", lambda x: tf.math.top_k(x, k=2).values,
       (T((3, 4), distinct=True),), dtypes=HALF_AND_WIDE),
    Op("dynamic_stitch", "array",
       lambda x, y: tf.dynamic_stitch([np.array([0, 2]), np.array([1, 3])], [x, y]),
       (T((2, 2)), T((2, 2)))),
    Op("dynamic_partition", "array",
       lambda x: tf.dynamic_partition(x, np.array([1, 0, 1]), 2), (T((3, 2)),), modes=NO_XLA),
    Op("clip_by_norm", "array", lambda x: tf.clip_by_norm(x, 1.0), (T((2, 3), gs.interval(0.5, 2)),)),
    Op("identity_n", "array", lambda x, y: tf.identity_n([x, y]), (T((2,)), T((3,)))),
    Op("einsum, diagonal", "array", lambda x: tf.einsum("ii->i", x), (T((3, 3)),)),
    Op("unsorted_segment_sum", "segment",
       lambda x: tf.math.unsorted_segment_sum(x, INDICES, 4), (T((4, 2)),)),
    Op("unsorted_segment_mean", "segment",
       lambda x: tf.math.unsorted_segment_mean(x, INDICES, 4), (T((4, 2)),)),
    Op("unsorted_segment_max", "segment",
       lambda x: tf.math.unsorted_segment_max(x, INDICES, 3), (T((4, 2), distinct=True),)),
    Op("unsorted_segment_prod", "segment",
       lambda x: tf.math.unsorted_segment_prod(x, INDICES, 3), (T((4, 2), NONZERO),)),
    Op("segment_sum", "segment", lambda x: tf.math.segment_sum(x, SEGMENTS), (T((4, 2)),),
       modes=NO_XLA),
    Op("segment_mean", "segment", lambda x: tf.math.segment_mean(x, SEGMENTS), (T((4, 2)),),
       modes=NO_XLA),
    Op("segment_max", "segment", lambda x: tf.math.segment_max(x, SEGMENTS),
       (T((4, 2), distinct=True),), modes=NO_XLA),
    Op("segment_min", "segment", lambda x: tf.math.segment_min(x, SEGMENTS),
       (T((4, 2), distinct=True),), modes=NO_XLA),
    Op("sparse_segment_sum", "segment",
       lambda x: tf.sparse.segment_sum(x, INDICES, SEGMENTS), (T((3, 2)),), modes=NO_XLA),
    Op("sparse_segment_mean", "segment",
       lambda x: tf.sparse.segment_mean(x, INDICES, SEGMENTS), (T((3, 2)),), modes=NO_XLA),
    Op("sparse_segment_sqrt_n", "segment",
       lambda x: tf.sparse.segment_sqrt_n(x, INDICES, SEGMENTS), (T((3, 2)),), modes=NO_XLA),
]

IMAGE = [
    Op("resize bilinear", "image", lambda x: tf.image.resize(x, [3, 5], method="bilinear"),
       (T((1, 2, 3, 1)),), dtypes=HALF_AND_WIDE, modes=NO_XLA),
    Op("resize bilinear, xla", "image", lambda x: tf.image.resize(x, [3, 5], method="bilinear"),
       (T((1, 2, 3, 1)),), dtypes=("float32",), modes=("xla",)),
    Op("resize bilinear, xla, not float32", "image",
       lambda x: tf.image.resize(x, [3, 5], method="bilinear"), (T((1, 2, 3, 1)),),
       dtypes=("float16", "float64"), modes=("xla",),
       defect="XLA's ResizeBilinearGrad returns garbage for float16 and float64 images (float64: "
              "[4.98e5, 1.95e8, 2.90e9, 4.0e-322, ...] where eager mode gives [4.9, 9.9, 12.7, 20.9, "
              "27.9, 28.7]; float32 is right)"),
    Op("resize bicubic", "image", lambda x: tf.image.resize(x, [4, 4], method="bicubic"),
       (T((1, 3, 3, 1)),), dtypes=WIDE, modes=NO_XLA),
    Op("resize nearest", "image", lambda x: tf.image.resize(x, [4, 6], method="nearest"),
       (T((1, 2, 3, 1)),), dtypes=HALF_AND_WIDE, modes=NO_XLA),
    Op("crop_and_resize", "image",
       lambda x, boxes: tf.image.crop_and_resize(x, boxes, [0, 0], [2, 2]),
       (T((1, 4, 4, 1)), T((2, 4), gs.interval(0.1, 0.9))), dtypes=("float32",), modes=NO_XLA),
    Op("rgb_to_grayscale", "image", tf.image.rgb_to_grayscale, (T((2, 2, 3)),)),
    Op("rgb_to_hsv", "image", tf.image.rgb_to_hsv, (T((2, 3), gs.interval(0.1, 0.9), distinct=True),),
       dtypes=WIDE),
    Op("rgb_to_yuv", "image", tf.image.rgb_to_yuv, (T((2, 2, 3)),), dtypes=WIDE),
    Op("per_image_standardization", "image", tf.image.per_image_standardization,
       (T((2, 2, 3), distinct=True),), dtypes=HALF_AND_WIDE),
    Op("total_variation", "image", tf.image.total_variation, (T((3, 3, 1), distinct=True),)),
    Op("flip_left_right", "image", tf.image.flip_left_right, (T((2, 3, 1)),)),
    Op("rot90", "image", tf.image.rot90, (T((2, 3, 1)),), modes=("eager",)),
    Op("rot90, traced", "image", tf.image.rot90, (T((2, 3, 1)),),
       dtypes=("float64",), modes=("function", "graph", "xla"),
       defect="in a v1 graph (tf.gradients), and in a tf.function (XLA too) under a tape that is not "
              "persistent, the gradient of rot90 fails when given an upstream gradient of the "
              "output's static shape: 'Incompatible shapes between op input and calculated "
              "input gradient' (cond_v2 differentiates every branch of rot90's tf.case, whose "
              "outputs have different shapes; a persistent tape, which keeps every branch's "
              "intermediates, does not fail)"),
    Op("sobel_edges", "image", tf.image.sobel_edges, (T((1, 3, 3, 1)),), dtypes=WIDE),
    Op("extract_patches", "image",
       lambda x: tf.image.extract_patches(x, [1, 2, 2, 1], [1, 1, 1, 1], [1, 1, 1, 1], "VALID"),
       (T((1, 3, 3, 1)),)),
]

SIGNAL = [
    Op("fft", "signal", tf.signal.fft, (T((2, 4), A),), dtypes=COMPLEX),
    Op("ifft", "signal", tf.signal.ifft, (T((4,), A),), dtypes=COMPLEX),
    Op("fft2d", "signal", tf.signal.fft2d, (T((3, 4), A),), dtypes=COMPLEX),
    Op("fft3d", "signal", tf.signal.fft3d, (T((2, 2, 3), A),), dtypes=COMPLEX),
    Op("rfft", "signal", tf.signal.rfft, (T((2, 6)),), dtypes=WIDE),
    Op("irfft", "signal", lambda x: tf.signal.irfft(x, fft_length=[6]), (T((4,), A),),
       dtypes=COMPLEX),
    Op("rfft2d", "signal", tf.signal.rfft2d, (T((3, 4)),), dtypes=WIDE),
    Op("dct type 2", "signal", lambda x: tf.signal.dct(x, type=2), (T((2, 5)),), dtypes=WIDE),
    Op("idct type 2", "signal", lambda x: tf.signal.idct(x, type=2, norm="ortho"), (T((5,)),),
       dtypes=WIDE),
    Op("frame", "signal", lambda x: tf.signal.frame(x, 3, 2), (T((7,)),)),
    Op("overlap_and_add", "signal", lambda x: tf.signal.overlap_and_add(x, 2), (T((3, 4)),)),
    Op("stft magnitude", "signal",
       lambda x: tf.abs(tf.signal.stft(x, frame_length=4, frame_step=2, fft_length=4)),
       (T((10,), distinct=True),), dtypes=WIDE),
]


def complex_op(name, fn, domain=A, shape=ELEMENTWISE, **extra):
    return Op(name, "complex", fn, (T(shape, domain),), COMPLEX, **extra)


COMPLEX_NONZERO = gs.nonzero(-2.0, 2.0, margin=0.3)

COMPLEX_OPS = [
    Op("complex from parts", "complex", tf.complex, same_shape(A, A), dtypes=WIDE),
    complex_op("real", tf.math.real),
    complex_op("imag", tf.math.imag),
    complex_op("conj", tf.math.conj),
    complex_op("abs, complex", tf.abs, COMPLEX_NONZERO),
    complex_op("angle", tf.math.angle, COMPLEX_NONZERO),
    complex_op("exp, complex", tf.exp),
    complex_op("log, complex", tf.math.log, COMPLEX_NONZERO),
    complex_op("sqrt, complex", tf.sqrt, COMPLEX_NONZERO, modes=NO_XLA),
    complex_op("rsqrt, complex", tf.math.rsqrt, COMPLEX_NONZERO, modes=NO_XLA),
    complex_op("sin, complex", tf.sin),
    complex_op("cos, complex", tf.cos),
    complex_op("tanh, complex", tf.tanh, gs.interval(-1.0, 1.0)),
    complex_op("sigmoid, complex", tf.sigmoid, gs.interval(-1.0, 1.0)),
    complex_op("reciprocal, complex", tf.math.reciprocal, COMPLEX_NONZERO, modes=NO_XLA),
    *[complex_op(f"{name}, complex, xla", fn, COMPLEX_NONZERO, modes=("xla",), defect=(
        f"XLA's {kernel} forgets the conjugate for complex inputs: at z = 0.3+0.3j it gives "
        f"{xla} where eager mode gives conj(f'(z)) = {eager}"))
      for name, fn, kernel, xla, eager in [
          ("reciprocal", tf.math.reciprocal, "ReciprocalGrad", "+5.556j", "-5.556j"),
          ("sqrt", tf.sqrt, "SqrtGrad", "0.709-0.294j", "0.709+0.294j"),
          ("rsqrt", tf.math.rsqrt, "RsqrtGrad", "-0.692+1.672j", "-0.692-1.672j")]],
    complex_op("square, complex", tf.square),
    complex_op("reduce_sum, complex", lambda z: tf.reduce_sum(z * z, axis=-1), shape=NONEMPTY),
    Op("multiply, complex", "complex", tf.multiply, broadcast(A, A), dtypes=COMPLEX),
    Op("divide, complex", "complex", tf.divide, same_shape(A, COMPLEX_NONZERO), dtypes=COMPLEX),
    Op("matmul, complex", "complex", tf.matmul, (T((2, 3)), T((3, 2))), dtypes=COMPLEX),
    Op("matmul, adjoint", "complex", lambda a, b: tf.matmul(a, b, adjoint_a=True),
       (T((3, 2)), T((3, 2))), dtypes=COMPLEX),
    Op("inv, complex", "complex", tf.linalg.inv, (T((3, 3), WELL),), dtypes=COMPLEX, modes=NO_XLA),
    Op("abs of sum, real output of complex", "complex", lambda z: tf.abs(tf.reduce_sum(z)) ** 2,
       (T((3,), gs.interval(0.2, 2.0)),), dtypes=COMPLEX),
]

OPS = MATH + REDUCTIONS + NN + LINALG + ARRAY + IMAGE + SIGNAL + COMPLEX_OPS
