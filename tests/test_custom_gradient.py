"""tf.custom_gradient in its forms: plain, nested, capturing variables, second order."""
import numpy as np
import pytest
import tensorflow as tf

from gradcheck import GradientCheckError, check_gradients

rng = np.random.default_rng(5)
X = rng.uniform(0.5, 1.5, size=(3,)).astype(np.float32)


@tf.custom_gradient
def log1pexp(x):
    """The stable softplus from TensorFlow's custom_gradient docs."""
    e = tf.exp(x)

    def grad(upstream):
        return upstream * (1 - 1 / (1 + e))

    return tf.math.log(1 + e), grad


def test_plain_custom_gradient_passes_in_every_mode():
    report = check_gradients(log1pexp, [X])
    assert {m.mode for m in report.modes if m.status == "checked"} == {"eager", "function", "graph", "xla"}


@tf.custom_gradient
def inner_double(x):
    return 2.0 * x, lambda dy: 2.0 * dy


@tf.custom_gradient
def outer_square_of_double(x):
    y = inner_double(x)

    def grad(dy):
        with tf.GradientTape() as tape:
            tape.watch(x)
            z = inner_double(x)
        return tape.gradient(z, x, output_gradients=dy * 2.0 * z)

    return y * y, grad


def test_nested_custom_gradients_pass():
    check_gradients(outer_square_of_double, [X])


def make_scaled(wrong_variable_gradient=False):
    scale = tf.Variable([1.5, -0.5, 2.0], name="scale")

    @tf.custom_gradient
    def scaled(x):
        def grad(dy, variables):
            d_scale = dy * x * (3.0 if wrong_variable_gradient else 1.0)
            return dy * scale, [d_scale]

        return x * scale, grad

    return scaled, scale


def test_gradients_with_respect_to_captured_variables_are_checked():
    scaled, scale = make_scaled()
    before = scale.numpy().copy()
    report = check_gradients(scaled, [X], modes=["eager", "function"])
    assert {p.input for p in report.pairs} == {"x", "scale"}
    assert any("reads the variable(s) scale: float32 (3,)" in n for n in report.notes)
    np.testing.assert_array_equal(scale.numpy(), before)  # perturbations were undone


def test_a_wrong_variable_gradient_is_caught_and_blamed_on_the_variable():
    scaled, _ = make_scaled(wrong_variable_gradient=True)
    with pytest.raises(GradientCheckError) as caught:
        check_gradients(scaled, [X], modes=["eager", "function"])
    assert {p.input for p in caught.value.report.failed_pairs} == {"scale"}
    assert "with respect to scale is wrong" in str(caught.value).splitlines()[0]


def test_a_missing_variable_gradient_is_caught():
    scale = tf.Variable([1.5, -0.5, 2.0], name="scale")

    @tf.custom_gradient
    def forgets_the_variable(x):
        def grad(dy, variables):
            return dy * scale, [tf.zeros_like(scale)]
        return x * scale, grad

    with pytest.raises(GradientCheckError, match="with respect to scale is wrong"):
        check_gradients(forgets_the_variable, [X], modes=["eager"])


def test_second_order_through_a_custom_gradient():
    @tf.custom_gradient
    def cube(x):
        return x ** 3, lambda dy: dy * 3.0 * x ** 2

    check_gradients(cube, [X.astype(np.float64)], order=2)
