"""Examples per second of gradient_test on a small op, with retracing avoided
(the same function object: its traces are reused) and without (a new wrapper
function per example, as if nothing were cached), side by side in one run: in
each mode alone and in all four at once (the default).

    python benchmarks/hypothesis_speed.py     # about 1 minute on 2 cores
"""
import os
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import tensorflow as tf
from hypothesis import HealthCheck, given, settings

from gradcheck import check_gradients, gradient_test
from gradcheck import strategies as gs
from gradcheck.execution.modes import MODE_NAMES

EXAMPLES = 100
SETTINGS = settings(max_examples=EXAMPLES, deadline=None, database=None, derandomize=True,
                    suppress_health_check=list(HealthCheck))
VALUES = gs.tensors("float32", gs.shapes(min_rank=1, max_rank=1, min_side=1, max_side=4),
                    elements=gs.interval(-2, 2))


def softplus(x):
    return tf.nn.softplus(x) * 2.0


def examples_per_second(test):
    start = time.perf_counter()
    test()
    return EXAMPLES / (time.perf_counter() - start)


def _fresh_wrapper_for(modes):
    # @given refuses arguments with defaults, so the modes are bound by a closure.
    def fresh_wrapper(x):
        check_gradients(lambda y: softplus(y), [x], modes=modes)  # a new function each time

    return fresh_wrapper


def main():
    print("| modes | traces reused | retracing every example | gain |")
    print("|---|---|---|---|")
    for modes in (["function"], ["eager"], ["graph"], ["xla"], list(MODE_NAMES)):
        reused = gradient_test(softplus, [VALUES], modes=modes, hypothesis_settings=SETTINGS)
        fresh = SETTINGS(given(VALUES)(_fresh_wrapper_for(modes)))
        with_cache = examples_per_second(reused)
        without = examples_per_second(fresh)
        name = "all four" if len(modes) > 1 else modes[0]
        print(f"| {name} | {with_cache:.1f} examples/s | {without:.1f} examples/s "
              f"| x{with_cache / without:.1f} |", flush=True)


if __name__ == "__main__":
    main()
