"""Choosing what is differentiated: wrt= picks the inputs to check, the others
are passed through as integer inputs are; no_gradient_for= declares inputs
whose gradient must be None, and checks that it is."""
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


N = np.array([1.0, 2.0])
AT = np.array([0.5, 1.5])


def polygamma(n, x):
    return tf.math.polygamma(n, x)


def test_polygamma_fails_without_declaring_its_order():
    with pytest.raises(GradientCheckError, match=r"declare it: no_gradient_for=\['n'\]"):
        check_gradients(polygamma, [N, AT], modes=["eager"])


@pytest.mark.parametrize("method", ["full", "fast"])
def test_polygamma_passes_with_its_order_declared_to_get_no_gradient(method):
    report = check_gradients(polygamma, [N, AT], no_gradient_for=["n"], method=method)
    declared = [p for p in report.pairs if p.input == "n"]
    assert report.ok
    assert {p.mode for p in declared} == {"eager", "function", "graph", "xla"}
    assert all(p.against == "None (declared)" and p.gradient_is_none for p in declared)


def test_tensorflows_own_names_work_too():
    assert check_gradients(tf.math.polygamma, [N, AT], no_gradient_for="a", modes=["eager"]).ok


@tf.custom_gradient
def zeros_for_n(n, x):
    return n * x, lambda dy: (tf.zeros_like(n), dy * n)


@tf.custom_gradient
def gradient_for_n(n, x):
    return n * x, lambda dy: (dy * x, dy * n)


@pytest.mark.parametrize("fn, largest", [(zeros_for_n, r"0 \("), (gradient_for_n, r"[1-9][\d.]* \(")])
def test_a_declared_input_that_gets_a_gradient_fails_saying_so(fn, largest):
    with pytest.raises(GradientCheckError,
                       match=rf"TensorFlow gives a gradient for n in eager, graph modes on CPU:0, "
                             rf"but no_gradient_for= declares it None: its largest entry is {largest}"):
        check_gradients(fn, [N, AT], no_gradient_for=["n"], modes=["eager", "graph"])


@pytest.mark.parametrize("options, message", [
    ({"no_gradient_for": ["m"]}, r"no_gradient_for=\['m'\] names 'm', which is no input"),
    ({"no_gradient_for": ["n"], "wrt": ["n", "x"]}, r"'n' is named by both wrt= and no_gradient_for="),
    ({"no_gradient_for": ["n", "x"]}, r"no_gradient_for= names every floating input"),
])
def test_declarations_that_cannot_be_used_are_refused(options, message):
    with pytest.raises(OptionError, match=message):
        check_gradients(polygamma, [N, AT], modes=["eager"], **options)


def test_declaring_an_integer_input_is_refused():
    with pytest.raises(OptionError, match=r"no_gradient_for= names n: int32 \(\), an integer"):
        check_gradients(lambda x, n: x * tf.cast(n, x.dtype), [X, np.int32(2)],
                        no_gradient_for=["n"])
