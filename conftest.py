"""Shared test setup: quiet TensorFlow logs, two logical CPUs, Hypothesis profiles."""
import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import pytest
from hypothesis import HealthCheck, settings

pytest_plugins = ["pytester"]

settings.register_profile(
    "ci", deadline=None, derandomize=True, max_examples=25, print_blob=True,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.register_profile("dev", deadline=None, max_examples=10)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci" if os.environ.get("CI") else "dev"))


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
        from gradcheck.plugin import load_hypothesis_profile

        load_hypothesis_profile("ci" if os.environ.get("CI") else "dev")
