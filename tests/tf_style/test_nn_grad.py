"""Gradient tests of linear algebra, nn and reduction ops in the style of
TensorFlow's matmul_op_test, batch_matmul_op_test, conv_ops_test,
softmax_op_test, bias_op_test and reduction_ops_test: compute_gradient, then
max_error against a threshold, with tf.test's compute_gradient and gradcheck's."""
import numpy as np
import pytest
import tensorflow as tf

from tests.tf_style.bindings import WithGradcheck, WithTF, gradcheck_error
from tests.tf_style.twins import dropped, scaled, twin

RNG = np.random.RandomState(3)
A, B = RNG.uniform(-1, 1, (4, 3)), RNG.uniform(-1, 1, (4, 2))
A32, B32 = A.astype(np.float32), B.astype(np.float32)
BATCH_A, BATCH_B = RNG.uniform(-1, 1, (2, 3, 4)), RNG.uniform(-1, 1, (2, 4, 2))
IMAGE = RNG.uniform(-1, 1, (1, 4, 4, 2))
FILTER = RNG.uniform(-1, 1, (2, 2, 2, 3))
LOGITS = RNG.uniform(-2, 2, (3, 4))
VALUE, BIAS = RNG.uniform(-1, 1, (2, 3, 4)), RNG.uniform(-1, 1, (4,))
REDUCED = RNG.uniform(-1, 1, (2, 3, 4))
FACTORS = RNG.uniform(0.5, 1.5, (3, 4)) * RNG.choice([-1, 1], (3, 4))


def matmul_transpose_a(a, b):
    return tf.matmul(a, b, transpose_a=True)


def conv2d(image, kernel):
    return tf.nn.conv2d(image, kernel, strides=1, padding="SAME")


def reduce_sum(x):
    return tf.reduce_sum(x, axis=[0, 2])


def reduce_mean(x):
    return tf.reduce_mean(x, axis=1, keepdims=True)


def reduce_prod(x):
    return tf.reduce_prod(x, axis=1)


class _NnGradients:
    """The tests; the subclasses below bind compute_gradient and max_error."""

    def testMatMulTransposeA(self):
        self.assertLess(self._error(matmul_transpose_a, [A, B]), 1e-8)

    def testMatMulTransposeAFloat32(self):
        self.assertLess(self._error(matmul_transpose_a, [A32, B32]), 1e-3)

    def testBatchMatMul(self):
        self.assertLess(self._error(tf.linalg.matmul, [BATCH_A, BATCH_B]), 1e-8)

    def testConv2DSame(self):
        self.assertLess(self._error(conv2d, [IMAGE, FILTER]), 1e-8)

    def testSoftmax(self):
        self.assertLess(self._error(tf.nn.softmax, [LOGITS]), 1e-7)

    def testLogSoftmax(self):
        self.assertLess(self._error(tf.nn.log_softmax, [LOGITS]), 1e-7)

    def testBiasAdd(self):
        self.assertLess(self._error(tf.nn.bias_add, [VALUE, BIAS]), 1e-8)

    def testReduceSum(self):
        self.assertLess(self._error(reduce_sum, [REDUCED]), 1e-8)

    def testReduceMeanKeepDims(self):
        self.assertLess(self._error(reduce_mean, [REDUCED]), 1e-8)

    def testReduceProd(self):
        self.assertLess(self._error(reduce_prod, [FACTORS]), 1e-7)


class NnGradientsWithTF(_NnGradients, WithTF, tf.test.TestCase):
    """The tests with tf.test.compute_gradient."""


class NnGradientsWithGradcheck(_NnGradients, WithGradcheck, tf.test.TestCase):
    """The same tests with gradcheck.compute_gradient."""


def _b_transposed_in_a(grads, dy, xs):
    """a's gradient b dy^T with b's columns in the wrong order (an index bug
    that keeps the shape)."""
    b = xs[1]
    return [tf.matmul(tf.reverse(b, axis=[1]), dy, transpose_b=True), grads[1]]


def _softmax_without_the_sum(grads, dy, xs):
    """softmax's gradient dy*s - s*sum(dy*s), its second term forgotten."""
    s = tf.nn.softmax(xs[0])
    return [dy * s]


TWINS = {
    "matmul, a's gradient from b reversed": (twin(matmul_transpose_a, _b_transposed_in_a),
                                             [A, B], 1e-8),
    "matmul float32, b's gradient x1.01": (twin(matmul_transpose_a, scaled(1.01, which=1)),
                                            [A32, B32], 1e-3),
    "batch_matmul, b's gradient dropped": (twin(tf.linalg.matmul, dropped(1)),
                                           [BATCH_A, BATCH_B], 1e-8),
    "conv2d, filter gradient x(1+1e-6)": (twin(conv2d, scaled(1 + 1e-6, which=1)),
                                          [IMAGE, FILTER], 1e-8),
    "softmax, sum term forgotten": (twin(tf.nn.softmax, _softmax_without_the_sum), [LOGITS], 1e-7),
    "log_softmax, gradient x1.0001": (twin(tf.nn.log_softmax, scaled(1.0001)), [LOGITS], 1e-7),
    "bias_add, bias gradient x(1+1e-6)": (twin(tf.nn.bias_add, scaled(1 + 1e-6, which=1)),
                                          [VALUE, BIAS], 1e-8),
    "reduce_sum, gradient x1.01": (twin(reduce_sum, scaled(1.01)), [REDUCED], 1e-8),
    "reduce_mean, gradient x(1+1e-6)": (twin(reduce_mean, scaled(1 + 1e-6)), [REDUCED], 1e-8),
    "reduce_prod, gradient x(1+1e-6)": (twin(reduce_prod, scaled(1 + 1e-6)), [FACTORS], 1e-7),
}


@pytest.mark.parametrize("name", list(TWINS))
def test_broken_twin_fails_under_gradcheck(name):
    f, x, threshold = TWINS[name]
    assert gradcheck_error(f, x) > threshold
