"""gradcheck against tf.test.compute_gradient on functions with control flow,
side by side in one run, mode for mode and in all four modes.

Three functions of the kind op authors write (the first two from
tests/test_control_flow.py):
- bessel_i0: the modified Bessel function I0 summed as a series in a
  tf.while_loop until the terms vanish, with a tf.custom_gradient (I1, also a
  while-loop series);
- scan: a recurrence h_t = tanh(0.9 h_(t-1) + x_t) with tf.scan, differentiated
  by TensorFlow through the loop;
- ode: 400 explicit Euler steps of dx/dt = -x sin(x) in a tf.while_loop with
  maximum_iterations, 10 ms or more per call eagerly.

For each function, size and mode: gradcheck's time (full mode, the default at
these sizes), compute_gradient's (the anchor, in that mode: eagerly, under
tf.function, in a v1 graph and session, under tf.function(jit_compile=True)),
their ratio, and how many points each evaluated: forward passes plus VJP rows
(a batch of k rows counts k). "4 modes" is one gradcheck check of all four
against the anchor run once per mode. Everything is cold: each check gets a new
function object.

    python benchmarks/control_flow_speed.py     # about 3 minutes on 2 cores
"""
import contextlib
import os
import sys
import time
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np
import tensorflow as tf

from gradcheck import check_gradients
from gradcheck.execution import (
    eager_runner,
    evaluator,
    function_runner,
    graph_runner,
    probes,
    runner,
)
from gradcheck.execution.modes import MODE_NAMES
from tests.test_control_flow import bessel_i0, recurrence

SIZES = [int(s) for s in os.environ.get("GRADCHECK_BENCH_CF_SIZES", "4,100").split(",")]
ODE_STEPS = 400


def ode(x):
    step = tf.constant(1.0 / ODE_STEPS, x.dtype)
    _, y = tf.while_loop(lambda k, y: k < ODE_STEPS, lambda k, y: (k + 1, y - step * y * tf.sin(y)),
                         (tf.constant(0), x), maximum_iterations=ODE_STEPS)
    return y


FUNCTIONS = {"bessel_i0": bessel_i0, "scan": recurrence, "ode": ode}


def inputs(name, n):
    rng = np.random.default_rng(n)
    low, high = (0.5, 3.0) if name == "bessel_i0" else (-1.0, 1.0)
    return rng.uniform(low, high, size=n)


class Points:
    """Counts the points a check evaluates: forward passes plus VJP/JVP rows,
    by wrapping gradcheck's own evaluation entry points while counting."""

    def __init__(self):
        self.count = 0

    @contextlib.contextmanager
    def counting(self):
        def one(*args):
            return 1

        def rows(_self, cotangents, *args):
            return len(cotangents[0]) if cotangents else 1

        def batch(_self, i, points, *args):
            return len(points)

        def tangent_rows(_self, fixed, tangents):
            return len(tangents[0])

        entries = [(probes, "probe", one),
                   (evaluator.BatchedEvaluator, "_vectorised", batch),
                   (evaluator.BatchedEvaluator, "at", one),
                   (eager_runner.EagerRunner, "_record", one),
                   (eager_runner.EagerRunner, "_traced_vjp", rows),
                   (eager_runner.EagerRunner, "_row_vjp", one),
                   (eager_runner.EagerRunner, "jvp", tangent_rows),
                   (runner.TracedRunner, "_vectorized_vjp", rows),
                   (runner.TracedRunner, "_row_vjp", one),
                   (graph_runner.GraphRunner, "forward", one),
                   (graph_runner.GraphRunner, "_vectorized_vjp", rows),
                   (graph_runner.GraphRunner, "_row_vjp", one),
                   (graph_runner.GraphRunner, "jvp", tangent_rows),
                   (function_runner.FunctionRunner, "forward", one),
                   (function_runner.FunctionRunner, "jvp", tangent_rows)]
        saved = [(owner, name, vars(owner)[name]) for owner, name, _ in entries]
        for owner, name, size in entries:
            setattr(owner, name, self._counted(vars(owner)[name], size))
        try:
            yield self
        finally:
            for owner, name, original in saved:
                setattr(owner, name, original)

    def _counted(self, original, size):
        def counted(*args, **kwargs):
            self.count += size(*args)
            return original(*args, **kwargs)

        return counted


def counted_calls(fn):
    """fn, and a list whose length is the number of times it was called."""
    calls = []

    def wrapped(*xs):
        calls.append(None)
        return fn(*xs)

    return wrapped, calls


def anchor(fn, x, mode):
    """tf.test.compute_gradient in one mode; eagerly, each call of fn is one point."""
    if mode == "graph":
        with tf.Graph().as_default(), tf.compat.v1.Session():
            return tf.test.compute_gradient(fn, [x])
    wrapped = {"eager": fn, "function": tf.function(fn),
               "xla": tf.function(fn, jit_compile=True)}[mode]
    return tf.test.compute_gradient(wrapped, [tf.constant(x)])


def anchor_points(fn, x):
    """The anchor's points in one mode: its calls of fn, counted eagerly (every
    mode makes the same calls)."""
    counted, calls = counted_calls(fn)
    anchor(counted, x, "eager")
    return len(calls)


def seconds(call):
    start = time.perf_counter()
    result = call()
    return time.perf_counter() - start, result


def check_seconds(fn, x, mode_names):
    points = Points()
    with points.counting():
        elapsed, report = seconds(lambda: check_gradients(lambda v: fn(v), [x], modes=mode_names,
                                                          raise_on_failure=False))
    return elapsed, points.count, report


def call_seconds(fn, x):
    """One eager call of fn, the best of 3."""
    return min(seconds(lambda: fn(tf.constant(x)))[0] for _ in range(3))


def rows_for(name, n):
    x = inputs(name, n)
    fn = FUNCTIONS[name]
    per_anchor = anchor_points(fn, x)
    anchor_total = 0.0
    for mode in MODE_NAMES:
        theirs = anchor_seconds(fn, x, mode)
        anchor_total += theirs or 0.0
        ours, points, report = check_seconds(fn, x, [mode])
        yield _row(name, n, mode, ours, theirs, points, per_anchor, report)
    ours, points, report = check_seconds(fn, x, list(MODE_NAMES))
    yield _row(name, n, "4 modes", ours, anchor_total, points, 4 * per_anchor, report)


def anchor_seconds(fn, x, mode):
    """The anchor's seconds in one mode, or None where it raises (tf.scan's
    TensorList cannot cross from XLA back to TensorFlow for its gradient)."""
    try:
        return seconds(lambda: anchor(lambda v: fn(v), x, mode))[0]
    except tf.errors.OpError:
        return None


def _row(name, n, mode, ours, theirs, points, anchor_points_, report):
    verdict = "passed" if report.ok else "FAILED"
    anchor_text = f"{theirs:.2f} s | {theirs / ours:.1f}x" if theirs else "raises | -"
    return (f"| {name} | {n} | {mode} | {ours:.2f} s | {anchor_text} | "
            f"{points} | {anchor_points_} | {verdict} |")


def warm_up():
    """Start TensorFlow, XLA and a v1 session once, untimed, for both tools."""
    tiny = np.linspace(0.5, 1.0, 4)
    check_gradients(lambda v: tf.sin(v), [tiny])
    for mode in MODE_NAMES:
        anchor(lambda v: tf.sin(v), tiny, mode)


def main():
    warm_up()
    for name in FUNCTIONS:
        x = inputs(name, SIZES[0])
        print(f"{name}: one eager call {call_seconds(FUNCTIONS[name], x) * 1e3:.1f} ms", flush=True)
    print("\n| function | n | mode | gradcheck | compute_gradient | speed-up | gradcheck points "
          "| compute_gradient points | verdict |")
    print("|---|---|---|---|---|---|---|---|---|")
    for n in SIZES:
        for name in FUNCTIONS:
            for row in rows_for(name, n):
                print(row, flush=True)


if __name__ == "__main__":
    main()
