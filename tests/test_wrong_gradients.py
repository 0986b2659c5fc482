"""Deliberately wrong tf.custom_gradient gradients are caught, and the message
points at the input and the elements that are wrong."""
import numpy as np
import pytest
import tensorflow as tf

from gradcheck import GradientCheckError, check_gradients

rng = np.random.default_rng(7)
X = rng.uniform(0.5, 1.5, size=(3, 4))


@tf.custom_gradient
def square_wrong_sign(x):
    return x * x, lambda dy: -2.0 * x * dy


@tf.custom_gradient
def square_wrong_factor(x):
    return x * x, lambda dy: 3.0 * x * dy


@tf.custom_gradient
def sum_of_squares_ignoring_upstream(x):
    return tf.reduce_sum(x * x), lambda dy: 2.0 * x


@tf.custom_gradient
def square_ignoring_upstream(x):
    return x * x, lambda dy: 2.0 * x


@tf.custom_gradient
def add_without_broadcast_reduction(x, y):
    def grad(dy):
        return tf.reduce_sum(dy, axis=1, keepdims=True), dy  # dy for y is not reduced to (1, 4)...
    return x + y, grad


@tf.custom_gradient
def add_with_broadcast_reduction_over_wrong_axis(x, y):
    def grad(dy):
        return tf.reduce_sum(dy, axis=1, keepdims=True), tf.reduce_mean(dy, axis=0, keepdims=True)
    return x + y, grad


@tf.custom_gradient
def square_wrong_where_negative(x):
    return x * x, lambda dy: tf.where(x < 0, 2.5 * x, 2.0 * x) * dy


@tf.custom_gradient
def mul_wrong_for_second_input(x, y):
    return x * y, lambda dy: (dy * y, dy * y)


@pytest.mark.parametrize("fn", [square_wrong_sign, square_wrong_factor, square_ignoring_upstream])
def test_elementwise_bug_is_caught_in_every_mode(fn):
    with pytest.raises(GradientCheckError) as caught:
        check_gradients(fn, [X])
    report = caught.value.report
    assert not report.ok
    failing_modes = {p.mode for p in report.failed_pairs if p.against == "finite differences"}
    assert failing_modes == {"eager", "function", "graph", "xla"}
    assert str(caught.value).startswith("The gradient of output with respect to x is wrong")


def test_ignoring_the_upstream_gradient_is_caught_even_for_a_scalar_output():
    with pytest.raises(GradientCheckError, match="with respect to x"):
        check_gradients(sum_of_squares_ignoring_upstream, [X])


def test_gradient_error_is_an_assertion_error_and_can_be_returned_instead():
    with pytest.raises(AssertionError):
        check_gradients(square_wrong_sign, [X], modes=["eager"])
    report = check_gradients(square_wrong_sign, [X], modes=["eager"], raise_on_failure=False)
    assert report.ok is False
    assert "FAIL" in str(report)


def test_missing_broadcast_reduction_is_reported_as_a_wrong_gradient():
    x, y = rng.normal(size=(3, 1)), rng.normal(size=(1, 4))
    report = check_gradients(add_without_broadcast_reduction, [x, y], raise_on_failure=False)
    assert not report.ok
    assert any("shape" in m.reason and "'y'" in m.reason for m in report.failed_modes), report


def test_broadcast_reduction_by_mean_instead_of_sum_is_caught_for_that_input_only():
    x, y = rng.normal(size=(3, 1)), rng.normal(size=(1, 4))
    report = check_gradients(add_with_broadcast_reduction_over_wrong_axis, [x, y],
                             raise_on_failure=False)
    wrong_inputs = {p.input for p in report.failed_pairs}
    assert wrong_inputs == {"y"}


def test_a_gradient_wrong_in_one_region_names_an_element_of_that_region():
    x = np.array([-1.0, -0.5, 0.5, 1.0, 2.0])
    with pytest.raises(GradientCheckError) as caught:
        check_gradients(square_wrong_where_negative, [x], modes=["function"])
    pair = caught.value.report.failed_pairs[0]
    assert pair.n_failed == 2  # exactly the two negative elements
    assert pair.worst_input in ("x[0]", "x[1]")
    assert "2 of 25 Jacobian entries differ" in str(caught.value)


def test_a_gradient_wrong_only_for_the_second_input_blames_that_input():
    x, y = rng.normal(size=4), rng.normal(size=4)
    with pytest.raises(GradientCheckError) as caught:
        check_gradients(mul_wrong_for_second_input, [x, y])
    assert {p.input for p in caught.value.report.failed_pairs} == {"y"}
    assert "with respect to y" in str(caught.value).splitlines()[0]


def _cube_with_wrong_second_derivative():
    @tf.custom_gradient
    def three_x_squared(x):
        return 3.0 * x * x, lambda dy: dy * 3.0 * x  # should be 6x

    @tf.custom_gradient
    def cube(x):
        return x * x * x, lambda dy: dy * three_x_squared(x)

    return cube


def test_wrong_second_derivative_passes_order_1_and_fails_order_2():
    cube = _cube_with_wrong_second_derivative()
    x = rng.uniform(0.5, 1.5, size=(3,))
    assert check_gradients(cube, [x]).ok
    with pytest.raises(GradientCheckError) as caught:
        check_gradients(cube, [x], order=2)
    report = caught.value.report
    assert {p.order for p in report.failed_pairs} == {2}
    assert "order 2" in str(caught.value).splitlines()[0]


def test_correct_second_derivative_passes_order_2_in_every_mode():
    report = check_gradients(lambda x, y: tf.sin(x) * y * y, [rng.normal(size=3), rng.normal(size=3)],
                             order=2)
    assert {(m.mode, m.status) for m in report.modes if m.order == 2} == {
        ("eager", "checked"), ("function", "checked"), ("graph", "checked"), ("xla", "checked")}


@tf.custom_gradient
def product_with_neighbour_missing_a_term(x):
    """y_i = x_i * x_{i+1 mod n}; the gradient forgets d y_i / d x_{i+1}, so it
    claims a diagonal Jacobian and the finite differences must not trust that."""
    neighbour = tf.roll(x, shift=-1, axis=0)
    return x * neighbour, lambda dy: dy * neighbour


def test_a_gradient_that_claims_a_zero_that_is_not_there_is_caught_at_that_entry():
    x = np.linspace(0.5, 1.5, 40)
    with pytest.raises(GradientCheckError) as caught:
        check_gradients(product_with_neighbour_missing_a_term, [x], modes=["function"],
                        method="full")
    pair = caught.value.report.failed_pairs[0]
    assert pair.n_failed == 40  # every missing off-diagonal entry, none of the diagonal
    row = int(pair.worst_output[len("output["):-1])
    column = int(pair.worst_input[len("x["):-1])
    assert column == (row + 1) % 40 and pair.worst_actual == 0.0


@tf.custom_gradient
def sin_ten_percent_off(x):
    return tf.sin(x), lambda dy: dy * tf.cos(x) * 1.1


def test_a_step_too_small_to_judge_fails_as_inconclusive_and_names_eps():
    # At eps=1e-15 rounding leaves the differences uncertain by about 0.3: a
    # gradient 10% off passed on that uncertainty before.
    with pytest.raises(GradientCheckError, match="could not be judged") as failure:
        check_gradients(sin_ten_percent_off, [np.array([0.5, 1.0, 1.5])], eps=1e-15,
                        modes=["eager"])
    message = str(failure.value)
    assert "The step eps=1e-15 leaves the finite differences too uncertain" in message
    assert "inconclusive" in message and "UNDECIDED" in message


@tf.custom_gradient
def sqrt_with_a_huge_gradient(x):
    return tf.sqrt(x), lambda dy: dy * 12345.0


def test_a_gradient_whose_only_entries_cannot_be_differenced_is_not_ok():
    # At 0 the differences of sqrt are NaN; the off-diagonal entries are zero
    # in both, so nothing that could be wrong was judged.
    with pytest.raises(GradientCheckError, match=r"Nothing of d output / d x could be "
                       r"checked .* not finite at 2 of 4 entries \(first: d output\[0\] / d x\[0\]\)"):
        check_gradients(sqrt_with_a_huge_gradient, [np.array([0.0, 0.0])], modes=["eager"])


def test_entries_that_cannot_be_differenced_are_shown_as_unchecked():
    report = check_gradients(tf.sqrt, [np.array([0.0, 1.0])], modes=["eager"],
                             raise_on_failure=False)
    assert report.ok, report  # d sqrt(x[1]) / d x[1] was judged, and is right
    assert "0/4 (1 unchecked)" in str(report)
