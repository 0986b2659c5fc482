"""Shared test setup: quiet TensorFlow logs, two logical CPUs, and gradcheck's
Hypothesis profile (the profiles themselves are defined once, in
gradcheck.testing.property_tests)."""
import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import pytest

pytest_plugins = ["pytester"]


def _split_cpu_in_two():
    """Two logical CPU devices, so multi-device code runs on a machine with no GPU.
    Must happen before TensorFlow initialises its devices."""
    import tensorflow as tf

    cpu = tf.config.list_physical_devices("CPU")[0]
    try:
        tf.config.set_logical_device_configuration(
            cpu, [tf.config.LogicalDeviceConfiguration()] * 2)
    except RuntimeError:  # devices already initialised by an earlier import
        pass
    return [d.name for d in tf.config.list_logical_devices("CPU")]


@pytest.fixture(scope="session")
def cpu_devices():
    devices = _split_cpu_in_two()
    if len(devices) < 2:
        pytest.skip("TensorFlow initialised its devices before the test could split the CPU in two")
    return devices


def pytest_configure(config):
    _split_cpu_in_two()
    if not config.getoption("gradcheck_hypothesis_profile"):
        from gradcheck.testing.plugin import load_hypothesis_profile

        load_hypothesis_profile("ci" if os.environ.get("CI") else "dev")
