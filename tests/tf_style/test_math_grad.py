"""Gradient tests of elementwise and scan math ops, written as TensorFlow's
kernel tests are (cwise_ops_unary_test, cwise_ops_binary_test, scan_ops_test):
compute_gradient, then max_error against a threshold. Each runs with
tf.test.compute_gradient and with gradcheck.compute_gradient."""
import numpy as np
import pytest
import tensorflow as tf

from tests.tf_style.bindings import WithGradcheck, WithTF, gradcheck_error
from tests.tf_style.twins import dropped, negated, scaled, swapped, twin

RNG = np.random.RandomState(7)
X32 = RNG.uniform(-2, 2, (2, 5)).astype(np.float32)
X64 = RNG.uniform(-3, 3, (3, 4))
POSITIVE = RNG.uniform(0.5, 2.5, (2, 3))
ABOVE_MINUS_ONE = RNG.uniform(-0.5, 2.0, (3, 3))
BASE, EXPONENT = RNG.uniform(0.5, 2.0, (2, 3)), RNG.uniform(-1.5, 1.5, (2, 3))
Y_ATAN, X_ATAN = RNG.uniform(-1, 1, (2, 3)), RNG.uniform(0.3, 1.5, (2, 3))
A32, B32 = RNG.uniform(-1, 1, (3, 4)).astype(np.float32), RNG.uniform(-1, 1, (3, 4)).astype(np.float32)
L2 = RNG.uniform(-1, 1, (2, 3, 2)).astype(np.float32)
SCAN = RNG.uniform(-1, 1, (3, 4))


def lgamma(x):
    return tf.math.lgamma(x)


def exclusive_reverse_cumsum(x):
    return tf.cumsum(x, axis=1, exclusive=True, reverse=True)


class _MathGradients:
    """The tests; the subclasses below bind compute_gradient and max_error."""

    def testTanhFloat32(self):
        self.assertLess(self._error(tf.tanh, [X32]), 1e-3)

    def testSigmoid(self):
        self.assertLess(self._error(tf.sigmoid, [X64]), 1e-7)

    def testSqrt(self):
        self.assertLess(self._error(tf.sqrt, [POSITIVE]), 1e-6)

    def testLog1p(self):
        self.assertLess(self._error(tf.math.log1p, [ABOVE_MINUS_ONE]), 1e-6)

    def testPowBothInputs(self):
        self.assertLess(self._error(tf.pow, [BASE, EXPONENT]), 1e-6)

    def testAtan2(self):
        self.assertLess(self._error(tf.math.atan2, [Y_ATAN, X_ATAN]), 1e-5)

    def testSquaredDifferenceFloat32(self):
        self.assertLess(self._error(tf.math.squared_difference, [A32, B32]), 1e-3)

    def testLgamma(self):
        self.assertLess(self._error(lgamma, [POSITIVE]), 1e-6)

    def testL2LossFloat32(self):
        self.assertLess(self._error(tf.nn.l2_loss, [L2]), 1e-3)

    def testCumsumExclusiveReverse(self):
        self.assertLess(self._error(exclusive_reverse_cumsum, [SCAN]), 1e-8)


class MathGradientsWithTF(_MathGradients, WithTF, tf.test.TestCase):
    """The tests with tf.test.compute_gradient."""


class MathGradientsWithGradcheck(_MathGradients, WithGradcheck, tf.test.TestCase):
    """The same tests with gradcheck.compute_gradient."""


# Each test's op with a wrong gradient, at the same inputs and threshold.
TWINS = {
    "tanh, gradient x1.01": (twin(tf.tanh, scaled(1.01)), [X32], 1e-3),
    "sigmoid, gradient x(1+1e-5)": (twin(tf.sigmoid, scaled(1 + 1e-5)), [X64], 1e-7),
    "sqrt, gradient x1.001": (twin(tf.sqrt, scaled(1.001)), [POSITIVE], 1e-6),
    "log1p, gradient x(1+1e-5)": (twin(tf.math.log1p, scaled(1 + 1e-5)), [ABOVE_MINUS_ONE], 1e-6),
    "pow, exponent's term dropped": (twin(tf.pow, dropped(1)), [BASE, EXPONENT], 1e-6),
    "atan2, gradients swapped": (twin(tf.math.atan2, swapped), [Y_ATAN, X_ATAN], 1e-5),
    "squared_difference, y's sign flipped": (twin(tf.math.squared_difference, negated(1)),
                                             [A32, B32], 1e-3),
    "lgamma, gradient x(1+1e-5)": (twin(lgamma, scaled(1 + 1e-5)), [POSITIVE], 1e-6),
    "l2_loss, gradient x1.01": (twin(tf.nn.l2_loss, scaled(1.01)), [L2], 1e-3),
    "cumsum, gradient x(1+1e-7)": (twin(exclusive_reverse_cumsum, scaled(1 + 1e-7)), [SCAN], 1e-8),
}


@pytest.mark.parametrize("name", list(TWINS))
def test_broken_twin_fails_under_gradcheck(name):
    f, x, threshold = TWINS[name]
    assert gradcheck_error(f, x) > threshold
