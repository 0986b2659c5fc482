"""forward_mode=True: JVPs from tf.autodiff.ForwardAccumulator, checked against
finite differences and against the reverse-mode Jacobian."""
import numpy as np
import pytest
import tensorflow as tf

from gradcheck import GradientCheckError, check_gradients

rng = np.random.default_rng(11)


def test_forward_mode_jacobians_are_checked_in_the_modes_that_have_them():
    report = check_gradients(lambda x, y: (tf.sin(x) * y, tf.reduce_sum(x * x)),
                             [rng.normal(size=3), rng.normal(size=3)], forward_mode=True)
    forward_rows = [p for p in report.pairs if p.mode.endswith("(forward)")]
    assert {p.mode for p in forward_rows} == {"eager (forward)", "function (forward)", "xla (forward)"}
    assert {p.against for p in forward_rows if p.mode == "xla (forward)"} == {
        "finite differences", "xla reverse mode"}
    assert all(p.ok for p in forward_rows)


def test_forward_mode_follows_the_complex_convention():
    z = rng.normal(size=2) + 1j * rng.normal(size=2)
    report = check_gradients(lambda z: z * z * tf.math.conj(z), [z], forward_mode=True,
                             modes=["function"])
    assert any(p.mode == "function (forward)" and p.dtype == "complex128" for p in report.pairs)


def test_forward_and_reverse_mode_disagreeing_is_a_finding():
    @tf.custom_gradient
    def square_with_wrong_backprop(x):
        return x * x, lambda dy: 3.0 * x * dy

    with pytest.raises(GradientCheckError) as caught:
        check_gradients(square_with_wrong_backprop, [rng.normal(size=3)], forward_mode=True,
                        modes=["function"])
    failing = {(p.mode, p.against) for p in caught.value.report.failed_pairs}
    # TensorFlow's forward mode differentiates the body (the derivative), while
    # reverse mode uses the custom backprop: both disagreements are reported.
    assert failing == {("function", "finite differences"),
                       ("function (forward)", "function reverse mode")}
