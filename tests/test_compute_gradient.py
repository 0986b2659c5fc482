"""gradcheck.compute_gradient against tf.test.compute_gradient: the same layout,
the same theoretical Jacobian, a numerical one at least as close."""
import numpy as np
import pytest
import tensorflow as tf

import gradcheck
from gradcheck import OptionError

RNG = np.random.default_rng(0)

CASES = {
    "tanh float64": (tf.tanh, [RNG.uniform(-1, 1, (2, 3))]),
    "matmul float32": (tf.matmul, [RNG.uniform(-1, 1, (2, 3)).astype(np.float32),
                                   RNG.uniform(-1, 1, (3, 4)).astype(np.float32)]),
    "square complex64": (lambda z: z * tf.math.conj(z) * z,
                         [np.array([1 + 2j, 0.5 - 1j, -0.3 + 0.2j], np.complex64)]),
    "real times imag complex128": (lambda z: tf.math.real(z) * tf.math.imag(z),
                                   [np.array([[1 + 2j, 0.5 - 1j]])]),
    "reduce_prod float64": (lambda x: tf.reduce_prod(x, axis=1), [RNG.uniform(0.5, 2, (3, 4))]),
}


@pytest.mark.parametrize("name", list(CASES))
def test_layout_and_theoretical_jacobian_are_tensorflows(name):
    f, x = CASES[name]
    tf_theoretical, tf_numerical = tf.test.compute_gradient(f, x)
    theoretical, numerical = gradcheck.compute_gradient(f, x)
    assert isinstance(theoretical, tuple) and isinstance(numerical, tuple)
    assert len(theoretical) == len(numerical) == len(x)
    for ours, theirs in zip(theoretical + numerical, tf_theoretical + tf_numerical):
        assert ours.shape == theirs.shape
        assert ours.dtype == theirs.dtype
    for ours, theirs in zip(theoretical, tf_theoretical):
        np.testing.assert_array_equal(ours, theirs)


@pytest.mark.parametrize("name", list(CASES))
def test_numerical_jacobian_is_at_least_as_close_as_tensorflows(name):
    f, x = CASES[name]
    tf_error = gradcheck.max_error(*tf.test.compute_gradient(f, x))
    ours = gradcheck.max_error(*gradcheck.compute_gradient(f, x))
    assert ours <= max(tf_error, 1e-6)
    if all(np.asarray(v).dtype in (np.float64, np.complex128) for v in x):
        assert ours < 1e-9


def test_float32_numerical_jacobian_is_taken_in_float64():
    # Richardson in float64 leaves only the float32 gradient's own rounding.
    x = [RNG.uniform(-1, 1, (3, 3)).astype(np.float32)]
    theoretical, numerical = gradcheck.compute_gradient(tf.sin, x)
    expected = np.diag(np.cos(x[0].astype(np.float64)).ravel())
    assert np.abs(numerical[0] - expected).max() < 1e-6
    assert np.abs(theoretical[0] - expected).max() < 1e-6


def test_delta_is_the_step_for_elements_within_one():
    # Plain central differences of x**3 would be off by delta**2; Richardson
    # cancels that term, so even a large delta gives the derivative closely.
    x = [np.array([0.5, -0.25])]
    _, numerical = gradcheck.compute_gradient(lambda v: v ** 3, x, delta=0.1)
    np.testing.assert_allclose(np.diag(numerical[0]), 3 * x[0] ** 2, rtol=1e-12)
    _, coarse = gradcheck.compute_gradient(tf.sin, [np.array([0.3])], delta=0.5)
    assert 1e-6 < abs(coarse[0][0, 0] - np.cos(0.3)) < 1e-2


def test_max_error_matches_gradient_checker_v2():
    from tensorflow.python.ops import gradient_checker_v2

    pairs = [([np.ones((2, 2)), np.zeros((0, 3))], [np.full((2, 2), 1.5), np.zeros((0, 3))]),
             ([np.zeros((0, 1))], [np.zeros((0, 1))]),
             ([np.array([[1.0, -2.0]]), np.array([[3.0]])], [np.array([[1.0, 2.0]]), np.array([[0.0]])])]
    for first, second in pairs:
        assert gradcheck.max_error(first, second) == gradient_checker_v2.max_error(first, second)
    assert gradcheck.max_error(*pairs[2]) == 4.0


def test_a_wrong_gradient_shows_in_max_error():
    @tf.custom_gradient
    def scaled_tanh(v):
        y = tf.tanh(v)
        return y, lambda dy: 1.01 * dy * (1 - y * y)

    error = gradcheck.max_error(*gradcheck.compute_gradient(scaled_tanh, [np.array([0.1, 0.7])]))
    assert error > 1e-3


def test_refusals_say_what_to_pass():
    with pytest.raises(OptionError, match="list or tuple"):
        gradcheck.compute_gradient(tf.sin, np.ones(2))
    with pytest.raises(OptionError, match=r"int32.*floating-point"):
        gradcheck.compute_gradient(lambda i: tf.cast(i, tf.float32), [np.array([1], np.int32)])
    with pytest.raises(OptionError, match="returned 2 tensors"):
        gradcheck.compute_gradient(lambda v: (v, 2 * v), [np.ones(2)])


def test_compute_gradient_inside_a_tf_function_is_refused_before_any_op_is_made():
    @tf.function
    def inside(x):
        return gradcheck.compute_gradient(tf.sin, [x])

    with pytest.raises(gradcheck.CheckSetupError,
                       match=r"compute_gradient was called inside a tf\.function"):
        inside(tf.constant([0.5]))
