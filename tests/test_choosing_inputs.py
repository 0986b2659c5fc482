"""Choosing what is differentiated: wrt= picks the inputs to check, the others
are passed through as integer inputs are."""
import numpy as np
import pytest
import tensorflow as tf

from gradcheck import GradientCheckError, OptionError, check_gradients

X = np.array([0.5, 1.0])
Y = np.array([2.0, -1.0])


@tf.custom_gradient
def product_wrong_in_y(x, y):
    return x * y, lambda dy: (dy * y, dy * 3.0 * x)


def test_without_wrt_the_wrong_gradient_of_y_fails():
    with pytest.raises(GradientCheckError, match="with respect to y is wrong"):
        check_gradients(product_wrong_in_y, [X, Y], modes=["eager"])


@pytest.mark.parametrize("wrt", [["x"], "x", [0], [-2], ("x", 0)])
def test_wrt_checks_only_the_inputs_it_names(wrt):
    report = check_gradients(product_wrong_in_y, [X, Y], modes=["eager", "graph"], wrt=wrt)
    assert report.ok
    assert {p.input for p in report.pairs} == {"x"}
    assert any("y (float64) is not in wrt=" in note for note in report.notes)


def test_wrt_naming_the_wrong_input_still_finds_it():
    with pytest.raises(GradientCheckError, match="with respect to y is wrong"):
        check_gradients(product_wrong_in_y, [X, Y], modes=["eager"], wrt=["y"])


def test_wrt_goes_through_second_order():
    report = check_gradients(product_wrong_in_y, [X, Y], modes=["function"], order=2, wrt=["x"])
    assert {(p.order, p.input) for p in report.pairs} == {(1, "x"), (2, "x")}


def test_a_float_input_left_out_is_not_taken_for_an_integer_input_in_graph_mode():
    report = check_gradients(lambda x, y: x * y, [X, Y], modes=["graph"], wrt=["x"])
    assert report.ok and not report.failed_modes


@pytest.mark.parametrize("wrt, message", [
    (["z"], r"wrt=\['z'\] names 'z', which is no input of the function: its inputs are 'x', 'y'"),
    ([2], r"names 2, which is no input .* argument indices 0 to 1"),
    ([], r"wrt=\[\] names no input"),
    ([True], r"True is neither an input's name nor an argument index"),
    (1.5, r"wrt must name inputs: a name or argument index, or a list of them"),
])
def test_wrt_naming_no_input_is_refused(wrt, message):
    with pytest.raises(OptionError, match=message):
        check_gradients(product_wrong_in_y, [X, Y], modes=["eager"], wrt=wrt)


def test_wrt_naming_an_integer_input_is_refused():
    with pytest.raises(OptionError, match=r"wrt= names n: int32 \(\), which is not floating"):
        check_gradients(lambda x, n: x * tf.cast(n, x.dtype), [X, np.int32(2)], wrt=["n"])
