"""Full mode against tf.test.compute_gradient, side by side in one run.

For each size and function: this project's time for a one-mode and a four-mode
check, tf.test.compute_gradient's time on the same function and input (both
cold: tracing included), their ratio, and the accuracy of both numeric
Jacobians against the analytic one.
"""
import os
import sys
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import numpy as np
import tensorflow as tf

from gradcheck import analytic, check_gradients, modes, numeric
from gradcheck.inputs import normalise_inputs
from gradcheck.outputs import FlatFunction, output_specs

SIZES = [int(s) for s in os.environ.get("GRADCHECK_BENCH_SIZES", "1000,4000").split(",")]


def elementwise(x):
    return tf.sin(x) * tf.exp(x / 4)


def make_dense(n):
    a = tf.constant(np.random.default_rng(0).normal(size=(n, n)) / np.sqrt(n))
    return lambda x: tf.tanh(tf.linalg.matvec(a, x))


def seconds(function, *args, **kwargs):
    start = time.perf_counter()
    result = function(*args, **kwargs)
    return time.perf_counter() - start, result


def anchor(fn, x):
    (theoretical,), (numerical,) = tf.test.compute_gradient(fn, [tf.constant(x)])
    return theoretical, numerical


def our_jacobians(fn, x):
    """gradcheck's numeric and analytic Jacobians (untimed), for the accuracy column."""
    flat = FlatFunction(fn)
    run = modes.runner("function", flat, [x], [0], [0], "/device:CPU:0", batch_size=512)
    values = run.forward()  # names the outputs
    specs = output_specs(flat.output_names, values)
    scales = analytic.row_scales(specs[0].real_size, np.random.default_rng(0))
    theoretical = analytic.analytic_jacobian(run, normalise_inputs(fn, [x]), [0], specs, scales, 512)
    evaluate = numeric.batched_evaluator(flat, [x], [0], "/device:CPU:0")
    numerical = numeric.numeric_jacobian(evaluate, [x], [0], specs, values)
    return theoretical[(0, 0)], numerical.blocks[(0, 0)]


def fresh(fn):
    """A new function object, so that no trace of an earlier check is reused: cold."""
    return lambda x: fn(x)


def worst_relative(a, b):
    scale = np.maximum(np.abs(b), 1e-3 * np.abs(b).max())
    return float(np.max(np.abs(a - b) / scale))


def main():
    print(f"{'function':12s} {'n':>6s} {'gradcheck 1 mode':>17s} {'4 modes':>9s} "
          f"{'compute_gradient':>17s} {'speed-up':>9s} {'4/1 modes':>10s} "
          f"{'gradcheck err':>14s} {'anchor err':>11s}")
    for n in SIZES:
        x = np.random.default_rng(1).uniform(-1, 1, size=n)
        for name, fn in (("elementwise", elementwise), ("dense", make_dense(n))):
            one, _ = seconds(check_gradients, fresh(fn), [x], modes=["function"], method="full")
            four, _ = seconds(check_gradients, fresh(fn), [x], method="full")
            theirs, (theoretical, numerical) = seconds(anchor, fresh(fn), x)
            ours_theoretical, ours_numerical = our_jacobians(fn, x)
            ours_err = worst_relative(ours_numerical, ours_theoretical)
            anchor_err = worst_relative(numerical, theoretical)
            print(f"{name:12s} {n:6d} {one:15.2f} s {four:7.2f} s {theirs:15.2f} s "
                  f"{theirs / one:8.1f}x {four / one:9.2f}x {ours_err:14.1e} {anchor_err:11.1e}",
                  flush=True)
    sys.stdout.flush()


if __name__ == "__main__":
    main()
