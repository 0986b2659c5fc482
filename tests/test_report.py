"""The report: a table a person can read, and the facts a program needs."""
import numpy as np
import pytest
import tensorflow as tf

from gradcheck import GradientCheckError, check_gradients


def test_report_lists_every_mode_and_pair():
    report = check_gradients(lambda x, y: (x * y, tf.reduce_sum(x)),
                             [np.ones((2, 2)), np.full((2, 2), 2.0)])
    text = str(report)
    assert text.splitlines()[0].startswith(
        "gradcheck of '<lambda>' (x: float64 (2, 2), y: float64 (2, 2)): OK")
    for mode in ("eager", "function", "graph", "xla"):
        assert f"CPU:0   {mode}" in text
    against_fd = [p for p in report.pairs if p.against == "finite differences"]
    assert {(p.output, p.input) for p in against_fd} == {
        ("output[0]", "x"), ("output[0]", "y"), ("output[1]", "x"), ("output[1]", "y")}
    assert all(p.n_failed == 0 and p.max_abs_error < 1e-9 for p in against_fd)


def test_integer_inputs_are_passed_through_and_noted():
    report = check_gradients(lambda x, i: tf.gather(x, i), [np.arange(4.0), np.array([3, 1])])
    assert report.ok
    assert any("i (int64) is not differentiable and gets no gradient" in n for n in report.notes)
    assert {p.input for p in report.pairs} == {"x"}


def test_unconnected_input_is_noted_and_compared_as_zeros():
    report = check_gradients(lambda x, y: x * 2.0, [np.ones(2), np.ones(2)], modes=["function"])
    assert report.ok
    assert any("with respect to y is None" in n for n in report.notes)


def test_failure_message_starts_with_the_finding_and_ends_with_a_reproduction():
    @tf.custom_gradient
    def doubled(x):
        return x, lambda dy: 2.0 * dy

    with pytest.raises(GradientCheckError) as caught:
        check_gradients(doubled, [np.array([1.0, 2.0], np.float32)], seed=11)
    lines = str(caught.value).splitlines()
    assert lines[0].startswith("The gradient of output with respect to x is wrong in "
                               "eager, function, graph, xla modes on CPU:0: 2 of 4")
    assert "is 2, finite differences give 1" in lines[0]
    assert any(line.startswith("reproduce: 'doubled' with inputs x: float32 (2,); seed=11")
               for line in lines)


def test_tolerances_can_be_overridden_per_dtype():
    @tf.custom_gradient
    def slightly_off(x):
        return x * x, lambda dy: 2.0 * x * dy * 1.001

    x = np.array([1.0, 2.0], np.float32)
    assert not check_gradients(slightly_off, [x], raise_on_failure=False).ok
    assert check_gradients(slightly_off, [x], rtol={"float32": 1e-2}).ok
    assert check_gradients(slightly_off, [x], rtol=1e-2).ok
    assert check_gradients(slightly_off, [x], rtol=1e-2).pairs[0].rtol == 1e-2


@tf.custom_gradient
def logsumexp_naive_softmax(x):
    def grad(dy):
        e = tf.exp(x)  # no max subtracted: inf / inf = NaN in float16 once x > 11.1
        return dy * e / tf.reduce_sum(e)

    return tf.reduce_logsumexp(x), grad


def test_the_same_nan_finding_in_several_modes_is_one_line():
    x = np.array([9.5, 10.25, 11.75, 12.5], np.float16)
    report = check_gradients(logsumexp_naive_softmax, [x], method="full",
                             modes=["eager", "function", "graph"], raise_on_failure=False)
    assert all(np.isnan(p.worst_actual) for p in report.failed_pairs)
    headlines = [line for line in report.failure_message().splitlines()
                 if line.startswith("The gradient of output")]
    assert len(headlines) == 1
    assert "is wrong in eager, function, graph modes on CPU:0" in headlines[0]


@tf.custom_gradient
def sin_with_random_gradient(x):
    def grad(dy):
        return dy * tf.cos(x) * (1.0 + 1e-3 * tf.random.uniform(tf.shape(x), dtype=x.dtype))
    return tf.sin(x), grad


@tf.custom_gradient
def sin_with_wrong_gradient(x):
    return tf.sin(x), lambda dy: dy * tf.cos(x) * 1.01


@pytest.mark.parametrize("method", ["full", "fast"])
def test_a_failing_gradient_that_is_random_is_said_to_be_nondeterministic(method):
    report = check_gradients(sin_with_random_gradient, [np.linspace(0.1, 1.0, 5)], method=method,
                             modes=["eager", "function", "graph"], raise_on_failure=False)
    assert not report.ok
    (note,) = [n for n in report.notes if "not deterministic" in n]
    for mode in ("eager", "function", "graph"):
        assert f"{mode} mode on CPU:0" in note
    assert "fixed seed" in note and f"note: {note}" in str(report)


@pytest.mark.parametrize("method", ["full", "fast"])
def test_a_wrong_but_deterministic_gradient_is_not_called_nondeterministic(method):
    report = check_gradients(sin_with_wrong_gradient, [np.linspace(0.1, 1.0, 5)], method=method,
                             raise_on_failure=False)
    assert not report.ok
    assert not any("not deterministic" in n for n in report.notes)
