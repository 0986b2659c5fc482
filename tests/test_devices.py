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


@pytest.mark.skipif(not tf.config.list_logical_devices("GPU"), reason="TensorFlow sees no GPU here")
def test_gpu_gradients_match_the_cpu():
    report = check_gradients(lambda x: tf.matmul(x, x, transpose_b=True), [X],
                             devices=["CPU:0", "GPU:0"])
    assert report.ok
