"""A function checked again, as in a Hypothesis run, reuses its traces, its v1
graph and (from the second check on) one batched trace for its small batches:
every check still reaches the verdict a first check would."""
import numpy as np
import pytest
import tensorflow as tf

from gradcheck import check_gradients
from gradcheck.execution import batching


@tf.custom_gradient
def sine_wrong_in_v1_graphs(x):
    def grad(dy):
        in_v1_graph = not tf.executing_eagerly() and not tf.inside_function()
        return dy * (-tf.cos(x) if in_v1_graph else tf.cos(x))
    return tf.sin(x), grad


@pytest.mark.parametrize("n", [3, batching.SMALL_BATCH + 4])
def test_every_repeated_check_fails_where_the_gradient_is_wrong(n):
    rng = np.random.default_rng(n)
    for _ in range(3):  # the second check on batches small ones: the third reuses that
        report = check_gradients(sine_wrong_in_v1_graphs, [rng.uniform(0.2, 1.2, n)],
                                 raise_on_failure=False)
        assert {p.mode for p in report.failed_pairs} == {"graph"}
