"""A check leaves the process as it found it: passing, failing or raising, and
with checks overlapping in threads (issue 22)."""
import json
import logging
import os
import random
import subprocess
import sys
import threading
import warnings

import numpy as np
import pytest
import tensorflow as tf
from tensorflow.python.framework import config as tf_config
from tensorflow.python.framework import ops
from tensorflow.python.ops import control_flow_util_v2

from gradcheck import CheckSetupError, GradientCheckError, OptionError, check_gradients
from gradcheck.numerics import memory

X = np.array([0.5, 1.0, 1.5])


def state(variables=()):
    """Everything a check could leave changed, in a form that compares with ==."""
    graph = tf.compat.v1.get_default_graph()
    numpy_random = np.random.get_state()
    return {
        "environment": dict(os.environ),
        "soft device placement": tf.config.get_soft_device_placement(),
        "functions run eagerly": tf.config.functions_run_eagerly(),
        "tensor float 32": tf.config.experimental.tensor_float_32_execution_enabled(),
        "op determinism": tf_config.is_op_determinism_enabled(),
        "jit": tf.config.optimizer.get_jit(),
        "optimizer options": tf.config.optimizer.get_experimental_options(),
        "device policy": tf.config.experimental.get_device_policy(),
        "visible devices": tf.config.get_visible_devices(),
        "executing eagerly": tf.executing_eagerly(),
        "TensorFlow logger": (tf.get_logger().level, list(tf.get_logger().handlers)),
        "root logger": logging.getLogger().level,
        "warning filters": list(warnings.filters),
        "output all intermediates":
            control_flow_util_v2._EXPERIMENTAL_OUTPUT_ALL_INTERMEDIATES_OVERRIDE,
        "Operation.__format__": vars(ops.Operation).get("__format__"),
        "numpy errors": np.geterr(),
        "numpy print options": np.get_printoptions(),
        "numpy huge pages": _huge_pages(),
        "numpy random state": (numpy_random[0], numpy_random[1].tolist()) + numpy_random[2:],
        "python random state": random.getstate(),
        "default graph": (id(graph), len(graph.get_operations())),
        "variables": [v.numpy().tolist() for v in variables],
    }


def _huge_pages():
    toggle = memory._huge_page_toggle()
    if toggle is None:
        return None
    setting = toggle(True)
    toggle(setting)
    return setting


@tf.custom_gradient
def _double_wrong_gradient(x):
    return 2.0 * x, lambda dy: 3.0 * dy


def _outcomes():
    """(the check, the exception it raises or None, the variables it reads)."""
    w = tf.Variable(2.0, dtype=tf.float64, name="w")
    counter = tf.Variable(1.0, dtype=tf.float64, name="counter")

    def counts_its_calls(x):
        counter.assign_add(1.0)
        return x * counter

    return {
        "pass": (lambda: check_gradients(lambda x: tf.sin(x) * w, [X]), None, [w]),
        "wrong gradient": (lambda: check_gradients(_double_wrong_gradient, [X]),
                           GradientCheckError, []),
        "setup error": (lambda: check_gradients(counts_its_calls, [X]), CheckSetupError,
                        [counter]),
        "option error": (lambda: check_gradients(tf.sin, [X], order=3), OptionError, []),
    }


def _run(check, raises):
    if raises is None:
        check()
    else:
        with pytest.raises(raises):
            check()


@pytest.mark.parametrize("outcome", ["pass", "wrong gradient", "setup error", "option error"])
def test_a_check_leaves_the_state_as_it_was(outcome):
    check, raises, variables = _outcomes()[outcome]
    before = state(variables)
    _run(check, raises)
    assert state(variables) == before


REPEATS = 5


def test_four_checks_in_threads_at_once_leave_the_state_as_it_was():
    chosen = ["pass", "pass", "wrong gradient", "setup error"]
    # Each thread its own variables: checks of one variable at once would race on it.
    checks = [_outcomes()[name] for name in chosen]
    variables = [v for _, _, of_check in checks for v in of_check]
    before = state(variables)
    raised = [None] * len(chosen)
    start = threading.Barrier(len(chosen))

    def run(k):
        start.wait()
        for _ in range(REPEATS):  # overlapping in every order
            try:
                checks[k][0]()
            except Exception as error:  # noqa: BLE001  (compared with the expected outcome below)
                raised[k] = type(error)

    threads = [threading.Thread(target=run, args=(k,)) for k in range(len(chosen))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert raised == [raises for _, raises, _ in checks]
    assert state(variables) == before


_IMPORT_SCRIPT = """
import json, os, sys
if sys.argv[1] == "tensorflow first":
    import tensorflow
import numpy as np
from gradcheck import check_gradients
check_gradients(lambda x: x * 2.0, [np.array([1.0])], modes=["eager", "xla"])
print(json.dumps(os.environ.get("TF_CPP_MIN_LOG_LEVEL")))
"""


@pytest.mark.slow
@pytest.mark.parametrize("who", ["tensorflow first", "gradcheck first"])
def test_the_log_level_variable_is_left_unset(who):
    """gradcheck quiets TensorFlow's C++ start-up logs only when it imports
    TensorFlow itself, and takes the variable back at once: the logs stay quiet."""
    env = {k: v for k, v in os.environ.items() if k != "TF_CPP_MIN_LOG_LEVEL"}
    done = subprocess.run([sys.executable, "-c", _IMPORT_SCRIPT, who], env=env,
                          capture_output=True, text=True, check=True)
    assert json.loads(done.stdout.splitlines()[-1]) is None
    quiet = "cpu_feature_guard" not in done.stderr and "XLA service" not in done.stderr
    assert quiet == (who == "gradcheck first"), done.stderr
