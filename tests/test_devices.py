"""Placement is real: each device is checked and compared with the others."""
import numpy as np
import pytest
import tensorflow as tf

from gradcheck import GradientCheckError, check_gradients

X = np.linspace(0.5, 1.5, 6).reshape(2, 3)


def test_two_devices_are_each_checked_and_compared(cpu_devices):
    report = check_gradients(lambda x: tf.sin(x) * x, [X], devices=cpu_devices[:2],
                             modes=["eager", "function"])
    assert {(p.device, p.mode) for p in report.pairs if p.against == "finite differences"} == {
        ("CPU:0", "eager"), ("CPU:0", "function"), ("CPU:1", "eager"), ("CPU:1", "function")}
    assert any(p.device == "CPU:1" and p.against == "eager on CPU:0" for p in report.pairs)


@tf.custom_gradient
def wrong_on_the_second_device(x):
    y = x * x

    def grad(dy):
        factor = 3.0 if y.device.endswith("CPU:1") else 2.0
        return factor * x * dy
    return y, grad


def test_a_gradient_wrong_on_one_device_only_is_found_there(cpu_devices):
    with pytest.raises(GradientCheckError) as caught:
        check_gradients(wrong_on_the_second_device, [X], devices=cpu_devices[:2],
                         modes=["eager", "function", "graph"])
    report = caught.value.report
    assert {p.device for p in report.failed_pairs} == {"CPU:1"}
    assert {p.mode for p in report.failed_pairs} == {"eager", "function", "graph"}
    assert {p.against for p in report.failed_pairs} == {"finite differences", "eager on CPU:0"}
    first, second = str(caught.value).splitlines()[:2]
    assert first == ("The modes disagree: eager, function, graph modes on CPU:0 get the derivative; "
                     "eager, function, graph modes on CPU:1 get a gradient that is not the derivative.")
    assert "is wrong in eager, function, graph modes on CPU:1" in second


def test_device_names_are_accepted_in_their_usual_spellings(cpu_devices):
    report = check_gradients(tf.sin, [X], devices=["cpu", "/CPU:1"], modes=["eager"])
    assert {p.device for p in report.pairs} == {"CPU:0", "CPU:1"}


def _pinned_forward(x):
    with tf.device("CPU:0"):
        y = tf.sin(x)
    return y * x


@tf.custom_gradient
def _pinned_gradient(x):
    def grad(dy):
        with tf.device("CPU:0"):
            return dy * tf.cos(x)
    return tf.sin(x), grad


@pytest.mark.parametrize("method", ["full", "fast"])
def test_a_check_on_the_second_cpu_reports_that_its_ops_ran_there(cpu_devices, method):
    report = check_gradients(lambda x: tf.sin(x) * tf.exp(x), [X], devices=["CPU:1"], method=method)
    assert {m.mode: m.status for m in report.modes} == dict.fromkeys(
        ["eager", "function", "graph", "xla"], "checked")
    line = next(s for s in str(report).splitlines() if s.startswith("ops that compute"))
    assert line.startswith("ops that compute on floats ran where asked, on CPU:1: eager ")
    assert line.endswith(", xla one compiled call")
    # Sin, Exp, Mul forward and Cos, Mul... backward: every mode read some of them.
    assert all(int(m.placed.split()[0]) >= 3 for m in report.modes if m.mode != "xla")


def test_a_forward_op_pinned_to_another_device_skips_the_mode_naming_it(cpu_devices):
    report = check_gradients(_pinned_forward, [X], devices=["CPU:1"],
                             modes=["eager", "function", "graph", "xla"], raise_on_failure=False)
    skipped = {m.mode: m.reason for m in report.skipped_modes}
    assert set(skipped) == {"eager", "function", "graph"}
    for reason in skipped.values():
        assert reason.startswith("asked for CPU:1, but ")
        assert "ran elsewhere (on CPU:0: Sin" in reason
    # tf.gradients puts the gradient ops beside their forward op, here on CPU:0.
    assert "Cos (gradients/Sin_grad/Cos)" in skipped["graph"]
    # jit_compile ignores inner tf.device scopes (TensorFlow #124880): xla ran on CPU:1.
    assert report.ok


def test_a_gradient_pinned_to_another_device_is_caught_where_tensorflow_honours_it(cpu_devices):
    report = check_gradients(_pinned_gradient, [X], devices=["CPU:1"],
                             modes=["eager", "function", "graph"], raise_on_failure=False)
    statuses = {m.mode: m.status for m in report.modes}
    assert statuses == {"eager": "skipped", "function": "skipped", "graph": "checked"}
    assert all("on CPU:0: Cos" in m.reason for m in report.skipped_modes)
    # Graph mode colocates gradient ops with the forward op, over the tf.device scope.
    assert "ran where asked, on CPU:1: graph 2 ops" in str(report)


def test_under_strict_an_op_that_ran_elsewhere_fails_the_check(cpu_devices):
    with pytest.raises(GradientCheckError) as caught:
        check_gradients(_pinned_forward, [X], devices=["CPU:1"], modes=["function"], strict=True)
    assert str(caught.value).startswith(
        "strict: function mode on CPU:1 could not be checked: asked for CPU:1, but 1 of its ")


@pytest.mark.parametrize("soft", [True, False])
def test_the_users_soft_placement_setting_is_left_as_it_was(cpu_devices, soft):
    before = tf.config.get_soft_device_placement()
    tf.config.set_soft_device_placement(soft)
    try:
        report = check_gradients(_pinned_forward, [X], devices=["CPU:1"], modes=["eager", "graph"],
                                 raise_on_failure=False)
        assert tf.config.get_soft_device_placement() is soft
    finally:
        tf.config.set_soft_device_placement(before)
    assert {m.status for m in report.modes} == {"skipped"}


@pytest.mark.skipif(not tf.config.list_logical_devices("GPU"), reason="TensorFlow sees no GPU here")
def test_gpu_gradients_match_the_cpu():
    report = check_gradients(lambda x: tf.matmul(x, x, transpose_b=True), [X],
                             devices=["CPU:0", "GPU:0"])
    assert report.ok


@pytest.mark.skipif(not tf.config.list_logical_devices("GPU"), reason="TensorFlow sees no GPU here")
def test_a_check_on_the_gpu_reports_where_its_ops_ran():
    report = check_gradients(lambda x: tf.sin(x) * x, [X], devices=["GPU:0"], modes=["function"])
    assert "ops that compute on floats ran where asked, on GPU:0: function " in str(report)
