"""gradcheck against tf.test.compute_gradient, side by side in one run: one table.

Full mode: for each size, function and number of modes, gradcheck's time, the
time tf.test.compute_gradient takes for the same work (the same function and
input, once per mode: eagerly, under tf.function, in a v1 graph and session,
and under tf.function(jit_compile=True)), their ratio, and full mode's time as a
multiple of the batched forward evaluations alone (the 4 n perturbed inputs that
uncompressed finite differences need). Everything is cold: each check gets a
new function object, so its traces are made afresh; gradcheck's times are the
median of 7 runs (a check at n = 1000 takes a tenth of a second, and single
runs vary by a third), compute_gradient's a single run.

Three functions: elementwise, sin(x) exp(x / 4); dense, tanh(x) (1 + mean(x)),
where every output depends on every input; and matvec, tanh(A x), dense too,
whose forward pass costs n^2 (at n = 1000 only by default, see MATVEC_SIZES).

Fast mode: the time of a check of a 10^6-element input as a multiple of one
forward plus one backward pass of the same function, cold (tracing included)
and warm (a second check of the same function, as in a Hypothesis run).

Accuracy: the worst relative distance between the numeric and the analytic
Jacobian, gradcheck's and compute_gradient's, in float64 and in float32 (a
float32 function judged against gradcheck's float64 reference).

    python benchmarks/speed.py     # about 4 minutes on 2 cores
"""
import math
import os
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import numpy as np
import tensorflow as tf

from gradcheck import _tf, check_gradients
from gradcheck.execution import evaluator, modes
from gradcheck.execution.inputs import normalise_inputs
from gradcheck.execution.outputs import FlatFunction, output_specs
from gradcheck.jacobian import analytic
from gradcheck.numerics import finite_differences as numeric

SIZES = [int(s) for s in os.environ.get("GRADCHECK_BENCH_SIZES", "1000,4000").split(",")]
# compute_gradient needs about 5 minutes a mode for tanh(A x) at n = 4000:
# GRADCHECK_BENCH_MATVEC_SIZES=1000,4000 adds that row (about 30 minutes).
MATVEC_SIZES = [int(s) for s in os.environ.get("GRADCHECK_BENCH_MATVEC_SIZES", "1000").split(",")]
FAST_SIZE = int(os.environ.get("GRADCHECK_BENCH_FAST_SIZE", "1000000"))


def elementwise(x):
    return tf.sin(x) * tf.exp(x / 4)


def dense(x):
    return tf.tanh(x) * (1.0 + tf.reduce_mean(x))


def make_matvec(n):
    """tanh(A x). A is captured as an eager tensor, as a user would write it
    (embedding a large numpy constant in every trace makes each check several
    times slower), except in a v1 graph, which cannot capture eager tensors and
    gets the numpy array."""
    a = np.random.default_rng(0).normal(size=(n, n)) / np.sqrt(n)
    captured = {dtype: tf.constant(a, dtype) for dtype in (tf.float32, tf.float64)}

    def matvec(x):
        in_v1_graph = not tf.compat.v1.executing_eagerly_outside_functions()
        matrix = tf.cast(a, x.dtype) if in_v1_graph else captured[x.dtype]
        return tf.tanh(tf.linalg.matvec(matrix, x))

    return matvec


def functions(n):
    yield "elementwise", elementwise
    yield "dense", dense
    if n in MATVEC_SIZES:
        yield "matvec", make_matvec(n)


def seconds(call, *args, **kwargs):
    start = time.perf_counter()
    result = call(*args, **kwargs)
    return time.perf_counter() - start, result


def median_seconds(call, *args, repeat=3, **kwargs):
    """The median of `repeat` timings: single runs here vary by a third."""
    return float(np.median([seconds(call, *args, **kwargs)[0] for _ in range(repeat)]))


def cold_check_seconds(fn, x, **options):
    """A check of a new function object each time, so that every trace is made afresh."""
    return median_seconds(lambda: check_gradients(fresh(fn), [x], **options), repeat=7)


def fresh(fn):
    """A new function object, so that no trace of an earlier check is reused."""
    return lambda x: fn(x)


def anchor(fn, x, mode):
    """tf.test.compute_gradient's (theoretical, numerical) Jacobians in one mode."""
    if mode == "graph":
        with tf.Graph().as_default(), tf.compat.v1.Session():
            (theoretical,), (numerical,) = tf.test.compute_gradient(fn, [x])
        return theoretical, numerical
    wrapped = {"eager": fn, "function": tf.function(fn),
               "xla": tf.function(fn, jit_compile=True)}[mode]
    (theoretical,), (numerical,) = tf.test.compute_gradient(wrapped, [tf.constant(x)])
    return theoretical, numerical


def later_modes_floor_seconds(fn, x):
    """The least the three later modes can add to a check: one cold forward +
    backward pass in each, tracing, compiling or building included (a
    tf.function; the same under jit_compile=True; a v1 graph differentiated
    with tf.gradients and run in a new session)."""
    total = 0.0
    for jit in (False, True):
        total += seconds(lambda jit=jit: cold_forward_backward(fresh(fn), x, jit))[0]
    start = time.perf_counter()
    with tf.Graph().as_default() as graph:
        placeholder = tf.compat.v1.placeholder(tf.as_dtype(x.dtype), x.shape)
        y = fresh(fn)(placeholder)
        grad = tf.gradients(y, placeholder, grad_ys=tf.ones_like(y))
        with tf.compat.v1.Session(graph=graph) as session:
            session.run(grad, {placeholder: x})
    return total + time.perf_counter() - start


def cold_forward_backward(fn, x, jit):
    """One forward + backward pass of fn at x in a new tf.function, traced here."""
    def forward_backward(x):
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = fn(x)
        return tape.gradient(y, x, output_gradients=tf.ones_like(y))

    return tf.function(forward_backward, jit_compile=jit)(tf.constant(x)).numpy()


def anchor_seconds(fn, x, mode_names):
    return sum(seconds(anchor, fresh(fn), x, mode)[0] for mode in mode_names)


def forward_evaluations_seconds(fn, x):
    """The batched forward evaluations of uncompressed finite differences alone."""
    flat = FlatFunction(fresh(fn))
    values = modes.runner("function", flat, [x], [0], [0], "/device:CPU:0", 1).forward()
    specs = output_specs(flat.output_names, values)
    evaluate = evaluator.batched_evaluator(flat, [x], [0], "/device:CPU:0")
    return seconds(numeric.numeric_jacobian, evaluate, [x], [0], specs, [values[0]])[0]


def our_jacobians(fn, x):
    """gradcheck's numeric (float64 reference) and analytic Jacobians."""
    with _tf.quiet_logs():  # as check_gradients keeps them: it retraces on purpose
        return _our_jacobians(fn, x)


def _our_jacobians(fn, x):
    flat = FlatFunction(fn)
    run = modes.runner("function", flat, [x], [0], [0], "/device:CPU:0", batch_size=512)
    values = run.forward()
    specs = output_specs(flat.output_names, values)
    scales = analytic.row_scales(specs[0].real_size, np.random.default_rng(0))
    theoretical = analytic.analytic_jacobian(run, normalise_inputs(fn, [x]), [0], specs, scales, 512)
    wide = x.astype(np.float64)
    evaluate = evaluator.batched_evaluator(FlatFunction(fn), [wide], [0], "/device:CPU:0")
    reference = numeric.numeric_jacobian(evaluate, [wide], [0], specs, [values[0].astype(np.float64)])
    return theoretical[(0, 0)], reference.blocks[(0, 0)]


def worst_relative(a, b):
    """The worst entry's distance relative to the entry (at least 1e-3 of the
    largest), and the worst distance relative to the largest entry."""
    scale = np.maximum(np.abs(b), 1e-3 * np.abs(b).max())
    return float(np.max(np.abs(a - b) / scale)), float(np.max(np.abs(a - b)) / np.abs(b).max())


def full_mode_rows():
    for n in SIZES:
        x = np.random.default_rng(1).uniform(-1, 1, size=n)
        for name, fn in functions(n):
            forward = forward_evaluations_seconds(fn, x)
            one = cold_check_seconds(fn, x, modes=["function"], method="full")
            one_anchor = anchor_seconds(fn, x, ["function"])
            print(_full_row(name, n, 1, one, one_anchor, one, forward), flush=True)
            four = cold_check_seconds(fn, x, method="full")
            four_anchor = anchor_seconds(fn, x, modes.MODE_NAMES)
            floor = median_seconds(later_modes_floor_seconds, fn, x)
            print(_full_row(name, n, 4, four, four_anchor, one, forward)
                  + f"  {(one + floor) / one:9.2f}x", flush=True)


def _full_row(name, n, n_modes, ours, theirs, one_mode, forward):
    anchor_text = f"{theirs:14.2f} s  {theirs / ours:7.1f}x"
    return (f"{name:12s} {n:6d} {n_modes:5d}  {ours:8.2f} s  {anchor_text}  {ours / one_mode:9.2f}x"
            f"  {ours / forward:10.2f}x")


def fast_mode_rows():
    side = math.isqrt(FAST_SIZE)
    w = np.random.default_rng(2).normal(size=(side, side)) / np.sqrt(side)
    cases = (("elementwise", elementwise, (FAST_SIZE,)),
             ("tanh(X W)", lambda x: tf.tanh(x @ tf.cast(w, x.dtype)), (side, side)))
    for name, fn, shape in cases:
        for dtype in ("float32", "float64"):
            x = np.random.default_rng(0).uniform(-1, 1, size=shape).astype(dtype)
            single = _forward_backward_seconds(fn, tf.constant(x))
            cold_pass = median_seconds(lambda f=fn, v=x: cold_forward_backward(fresh(f), v, False))
            cold = cold_check_seconds(fn, x, method="fast", modes=["function"])
            checked = fresh(fn)
            check_gradients(checked, [x], method="fast", modes=["function"])
            warm = median_seconds(check_gradients, checked, [x], method="fast", modes=["function"])
            print(f"{name:12s} {dtype:8s} {x.size:8d}  forward+backward {single * 1e3:7.1f} ms  "
                  f"cold {cold * 1e3:6.0f} ms = {cold / single:6.1f} x "
                  f"({cold / cold_pass:5.1f} x a cold traced pass of {cold_pass * 1e3:5.0f} ms)   "
                  f"warm {warm * 1e3:6.0f} ms = {warm / single:6.1f} x", flush=True)


def kink_rows():
    """relu at FAST_SIZE float64 elements, with some exactly 0: each kink that a
    projection crosses is found by bisection and judged on its own."""
    for zeros in (0, 20):
        rng = np.random.default_rng(0)
        x = rng.uniform(-1, 1, size=FAST_SIZE)
        x[rng.choice(FAST_SIZE, zeros, replace=False)] = 0.0
        single = _forward_backward_seconds(tf.nn.relu, tf.constant(x))
        cold = cold_check_seconds(tf.nn.relu, x, method="fast", modes=["function"])
        print(f"relu, {zeros:2d} zeros  float64  {x.size:8d}  forward+backward "
              f"{single * 1e3:7.1f} ms  cold {cold * 1e3:6.0f} ms = {cold / single:6.1f} x",
              flush=True)


def _forward_backward_seconds(fn, x, repeat=5):
    @tf.function
    def forward_backward(x):
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = fn(x)
        return tape.gradient(y, x, output_gradients=tf.ones_like(y))

    forward_backward(x).numpy()  # traced once, then timed
    return min(seconds(lambda: forward_backward(x).numpy())[0] for _ in range(repeat))


def accuracy_rows():
    n = 1000
    x = np.random.default_rng(1).uniform(-1, 1, size=n)
    for name, fn in functions(n):
        theoretical, numerical = anchor(fresh(fn), x, "function")
        ours_analytic, ours_numeric = our_jacobians(fresh(fn), x)
        x32 = x.astype(np.float32)
        theoretical32, numerical32 = anchor(fresh(fn), x32, "function")
        ours_analytic32, reference64 = our_jacobians(fresh(fn), x32)
        figures = [worst_relative(ours_numeric, ours_analytic),
                   worst_relative(numerical, theoretical),
                   worst_relative(reference64, ours_analytic32),
                   worst_relative(numerical32, theoretical32)]
        print(f"{name:12s} " + "  ".join(f"{entry:8.1e} {largest:8.1e}"
                                          for entry, largest in figures), flush=True)


def warm_up():
    """Start TensorFlow, XLA and a v1 session once, untimed, for both tools: what
    the first check in a process pays once is not a cost of that check."""
    tiny = np.linspace(-1.0, 1.0, 4)
    check_gradients(fresh(elementwise), [tiny])
    for mode in modes.MODE_NAMES:
        anchor(fresh(elementwise), tiny, mode)


def main():
    warm_up()
    print("Full mode, float64, cold (tracing included)")
    print(f"{'function':12s} {'n':>6s} {'modes':>5s}  {'gradcheck':>10s}  {'compute_gradient':>16s}"
          f"  {'speed-up':>8s}  {'vs 1 mode':>9s}  {'vs forward evaluations':>10s}"
          f"  {'floor vs 1 mode':>9s}")
    full_mode_rows()
    print("\nFast mode, as a multiple of one warm forward + backward pass (and, cold, of a "
          "cold traced one: a new tf.function)")
    fast_mode_rows()
    kink_rows()
    print("\nAccuracy, n = 1000: worst distance between numeric and analytic Jacobians, relative "
          "to the entry (at least 1e-3 of the largest) and to the largest entry")
    print(f"{'':12s} {'float64 gradcheck':>17s}  {'compute_gradient':>17s}  "
          f"{'float32 gradcheck':>17s}  {'compute_gradient':>17s}")
    accuracy_rows()


if __name__ == "__main__":
    main()
