"""The example C++ ops, checked the way an op author checks theirs."""
import numpy as np
import pytest
import tensorflow as tf
from ops import cube, cube_no_gradient, cube_without_gradient, library, roll_and_sum

from gradcheck import GradientCheckError, assert_no_gradient, check_gradients

X = np.array([0.5, -1.2, 2.0, 0.1])


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_cube_gradient_is_right_in_every_mode_it_runs_in(dtype):
    report = check_gradients(cube, [X.astype(dtype)])
    status = {m.mode: m.status for m in report.modes}
    assert status == {"eager": "checked", "function": "checked", "graph": "checked",
                      "xla": "skipped"}
    xla = next(m for m in report.modes if m.mode == "xla")
    assert "No registered 'Cube' OpKernel for XLA" in xla.reason  # not a gradient failure


def test_two_outputs_and_an_integer_shift():
    report = check_gradients(lambda x, shift: roll_and_sum(x, shift), [X, np.int32(3)])
    assert {p.output for p in report.pairs} == {"output[rolled]", "output[total]"}
    assert any("shift (int32) is not differentiable and gets no gradient" in n for n in report.notes)


def test_the_gradient_function_receives_both_upstream_gradients():
    # Only the total is used: a gradient that ignored grad_total would give zeros.
    report = check_gradients(lambda x: roll_and_sum(x, 1)[1] * 3.0, [X])
    assert report.ok


def test_an_op_marked_no_gradient_is_reported_clearly():
    with pytest.raises(GradientCheckError, match=r"TensorFlow gives no gradient \(None\) for x"):
        check_gradients(cube_no_gradient, [X])
    assert set(assert_no_gradient(cube_no_gradient, [X]).values()) == {"None"}


def test_an_op_with_no_gradient_at_all_is_reported_clearly():
    with pytest.raises(GradientCheckError, match="no gradient is defined"):
        check_gradients(cube_without_gradient, [X])
    assert set(assert_no_gradient(cube_without_gradient, [X]).values()) == {"not registered"}


def test_assert_no_gradient_fails_for_an_op_that_has_one():
    with pytest.raises(GradientCheckError, match="has a gradient in eager on CPU:0"):
        assert_no_gradient(cube, [X])


def test_a_wrong_gradient_swapped_in_by_an_override_map_is_caught_in_graph_mode():
    with pytest.raises(GradientCheckError) as caught:
        check_gradients(cube, [X], override_map={"Cube": "CubeGradForgetsTheSquare"})
    report = caught.value.report
    assert {p.mode for p in report.failed_pairs} == {"graph"}
    not_applicable = {m.mode for m in report.skipped_modes if "not applicable" in m.reason}
    assert not_applicable == {"eager", "function", "xla"}


def test_a_straight_through_estimator_passes_against_its_declared_gradient():
    report = check_gradients(cube, [X], override_map={"Cube": "CubeStraightThrough"},
                             reference=lambda x, dy: dy)
    assert report.ok
    assert report.obtained_by_mode() == {("CPU:0", "graph", 1): "the declared gradient"}
    distance = [p for p in report.pairs if p.against == "finite differences"]
    assert distance and not distance[0].ok and not distance[0].decisive  # shown, not judged


def test_an_override_that_never_takes_effect_is_flagged():
    # The map names an op type the function does not use: the true derivative is used.
    with pytest.raises(GradientCheckError) as caught:
        check_gradients(cube, [X], override_map={"Square": "CubeStraightThrough"},
                        reference=lambda x, dy: dy)
    assert caught.value.report.obtained_by_mode()[("CPU:0", "graph", 1)] == (
        "the derivative, not the declared gradient (the override did not take effect)")


def test_the_library_is_cached():
    assert library.path.is_file()
    assert library.path.name == "libexample_ops.so"


def test_second_order_through_the_registered_gradient():
    check_gradients(cube, [X], order=2, modes=["eager", "graph"])


def test_cube_in_float16_is_judged_against_a_float64_reference():
    report = check_gradients(lambda x: cube(x), [tf.constant(X, tf.float16)], modes=["eager"])
    assert report.reference_precision == "float64"
    assert {p.dtype for p in report.pairs} == {"float16"}
