"""What an op author writes: the README's quick start, as a test."""
import numpy as np
import pytest
import tensorflow as tf

from gradcheck import GradientCheckError, check_gradients


@tf.custom_gradient
def softplus(x):
    """log(1 + e^x), with a hand-written gradient."""
    def grad(dy):
        return dy * tf.sigmoid(x)
    return tf.math.log1p(tf.exp(x)), grad


def test_softplus_gradient():
    x = np.random.default_rng(0).normal(size=(4, 5)).astype(np.float32)
    report = check_gradients(softplus, [x])  # eager, tf.function, v1 graph, XLA
    print(report)


@tf.custom_gradient
def softplus_with_a_bug(x):
    return tf.math.log1p(tf.exp(x)), lambda dy: tf.sigmoid(x)  # forgets dy


def test_a_gradient_that_forgets_its_upstream_gradient_is_caught():
    x = np.random.default_rng(0).normal(size=(4, 5)).astype(np.float32)
    with pytest.raises(GradientCheckError, match="with respect to x is wrong"):
        check_gradients(softplus_with_a_bug, [x])


def test_second_order_and_two_inputs():
    a = np.random.default_rng(1).normal(size=(3, 3))
    b = np.random.default_rng(2).normal(size=(3, 2))
    check_gradients(lambda a, b: tf.tanh(a @ b), [a, b], order=2)
