"""Legacy function.Defun gradients, and TensorFlow's own
testSameFunctionDifferentGrads (tensorflow/python/framework/function_test.py)."""
import numpy as np
import pytest
import tensorflow as tf
from tensorflow.python.framework import function

from gradcheck import GradientCheckError, check_gradients

X = np.array(100.0, np.float32)


def same_function_different_grads():
    """Three functions with the body x * 2, as in TensorFlow's own test."""

    @function.Defun(tf.float32)
    def default_grad(x):
        return x * 2

    @function.Defun(tf.float32, tf.float32)
    def crazy_backprop(x, dy):
        return x + dy

    @function.Defun(tf.float32, grad_func=crazy_backprop)
    def with_grad_func(x):
        return x * 2

    def python_crazy_backprop(op, dy):
        return op.inputs[0] * dy / 2

    @function.Defun(tf.float32, python_grad_func=python_crazy_backprop)
    def with_python_grad_func(x):
        return x * 2

    return default_grad, with_grad_func, with_python_grad_func


def test_tensorflow_itself_gives_2_101_and_50_in_one_graph():
    """The facts the harness must reproduce, straight from TensorFlow."""
    functions = same_function_different_grads()
    graph = tf.Graph()
    with graph.as_default():
        x = tf.constant(100.0)
        grads = [tf.gradients(f(x), x)[0] for f in functions]
        with tf.compat.v1.Session(graph=graph) as session:
            assert session.run(grads) == [2.0, 101.0, 50.0]


def test_the_default_gradient_passes_and_defun_is_run_in_graph_mode_only():
    default_grad, _, _ = same_function_different_grads()
    report = check_gradients(default_grad, [X])
    assert {m.mode for m in report.modes} == {"graph"}
    assert report.obtained_by_mode() == {("CPU:0", "graph", 1): "the derivative"}
    assert any("function.Defun is graph-only" in n for n in report.notes)


@pytest.mark.parametrize("which, reference", [
    (1, lambda x, dy: x + dy),
    (2, lambda x, dy: x * dy / 2),
])
def test_an_overridden_defun_gradient_fails_against_fd_and_passes_against_its_reference(which, reference):
    f = same_function_different_grads()[which]
    with pytest.raises(GradientCheckError) as caught:
        check_gradients(f, [X])
    first_line = str(caught.value).splitlines()[0]
    assert first_line.startswith("The gradient of output with respect to x is wrong in graph mode")
    report = check_gradients(f, [X], reference=reference)
    assert report.obtained_by_mode() == {("CPU:0", "graph", 1): "the declared gradient"}


def test_no_function_borrows_another_functions_gradient():
    default_grad, with_grad_func, with_python_grad_func = same_function_different_grads()
    references = {"x+dy": lambda x, dy: x + dy, "x*dy/2": lambda x, dy: x * dy / 2}
    for f, own in ((with_grad_func, "x+dy"), (with_python_grad_func, "x*dy/2")):
        for name, reference in references.items():
            report = check_gradients(f, [X], reference=reference, raise_on_failure=False)
            assert report.ok == (name == own), (f, name)
    assert check_gradients(default_grad, [X], reference=lambda x, dy: 2 * dy).ok


def test_the_per_mode_view_shows_which_gradient_each_mode_used():
    _, with_grad_func, _ = same_function_different_grads()
    with pytest.raises(GradientCheckError) as caught:
        check_gradients(with_grad_func, [X], modes=["eager", "function", "graph"],
                        reference=lambda x, dy: x + dy)
    report = caught.value.report
    assert report.obtained_by_mode() == {("CPU:0", "function", 1): "no gradient (None)",
                                         ("CPU:0", "graph", 1): "the declared gradient"}
    assert str(caught.value).splitlines()[0] == (
        "The modes disagree: function mode on CPU:0 gets no gradient (None); "
        "graph mode on CPU:0 gets the declared gradient.")
    eager = next(m for m in report.modes if m.mode == "eager")
    assert eager.status == "skipped" and "Tensor.op is undefined" in eager.reason
