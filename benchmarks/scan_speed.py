"""The scan's time per op, side by side with tf.test.compute_gradient doing
the scan's first-order work in one run: one table.

For each op: the seconds `gradcheck.scan` spends on it with its defaults (the
input search, 3 examples in the most precise dtype and 1 in each other float
dtype, the first of each at order 2, every mode the op runs in), and the seconds
tf.test.compute_gradient takes for the examples the scan checked, in eager,
tf.function and v1 graph modes, at order 1 only (it has no order 2), with no
search. The ratio is scan / compute_gradient: what finding the inputs, order 2
and the comparisons between modes cost on top of the anchor's own checks.

Ops: the bug zoo's C++ ops (tests/bugzoo), the example ops and a dozen of
TensorFlow's own (tf.raw_ops).

    python benchmarks/scan_speed.py     # about 3 minutes on 2 cores
"""
import os
import sys
import time
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np
import tensorflow as tf

from gradcheck import scan

ROOT = Path(__file__).resolve().parents[1]
RAW_OPS = ["Sin", "Tanh", "Sigmoid", "Exp", "MatMul", "BiasAdd", "Softmax", "Sum", "Atan2",
           "Pow", "Cumsum", "AddN"]
TARGETS = [("bug zoo", "tests.bugzoo.zoo_ops"),
           ("examples", str(ROOT / "examples" / "custom_ops" / "ops.py")),
           ("tf.raw_ops", RAW_OPS)]


def timed_scan(target):
    """(report, {op type: seconds}) of one scan with its defaults."""
    seconds, last = {}, [time.perf_counter()]

    def lap(done, total, result):
        now = time.perf_counter()
        seconds[result.name] = now - last[0]
        last[0] = now

    return scan(target, on_result=lap), seconds


def anchor_seconds(op_call, examples):
    """tf.test.compute_gradient on each example, eagerly, in tf.function and in a graph."""
    start = time.perf_counter()
    for example in examples:
        fn = example.call.fn(op_call)
        floats = example.wrt
        values = list(example.inputs)

        def of_floats(*xs, values=values, floats=floats, fn=fn):
            full = list(values)
            for position, x in zip(floats, xs):
                full[position] = x
            result = fn(*full)
            return tf.nest.flatten(result)[0]

        float_values = [values[i] for i in floats]
        tf.test.compute_gradient(of_floats, [tf.constant(v) for v in float_values])
        tf.test.compute_gradient(tf.function(of_floats), [tf.constant(v) for v in float_values])
        with tf.Graph().as_default(), tf.compat.v1.Session():
            tf.test.compute_gradient(of_floats, float_values)
    return time.perf_counter() - start


def main():
    rows = []
    for label, target in TARGETS:
        report, seconds = timed_scan(target)
        calls = {}
        if isinstance(target, list):
            calls = {t: getattr(tf.raw_ops, t) for t in target}
        for result in report.results:
            if result.status != "right":
                rows.append((label, result.name, result.status, seconds[result.name], None))
                continue
            call = calls.get(result.name) or _library_call(target, result.name)
            rows.append((label, result.name, result.status, seconds[result.name],
                         anchor_seconds(call, result.examples)))
    print("| target | op | result | scan | compute_gradient, same examples | ratio |")
    print("|---|---|---|---|---|---|")
    for label, op, status, scan_s, anchor_s in rows:
        anchor_text = f"{anchor_s:.2f} s" if anchor_s is not None else "-"
        ratio = f"{scan_s / anchor_s:.1f}x" if anchor_s else "-"
        print(f"| {label} | {op} | {status} | {scan_s:.2f} s | {anchor_text} | {ratio} |")
    scanned = [r[3] for r in rows]
    right = [(r[3], r[4]) for r in rows if r[4]]
    scan_total, anchor_total = sum(s for s, _ in right), sum(a for _, a in right)
    print(f"\n{len(rows)} ops in {sum(scanned):.1f} s: median {np.median(scanned):.2f} s per op; "
          f"ops found right: scan {scan_total:.1f} s, compute_gradient {anchor_total:.1f} s, "
          f"ratio {scan_total / anchor_total:.1f}x")


def _library_call(target, op_type):
    from gradcheck.testing.scan import discover

    return next(op.call for op in discover.find_target(target).ops if op.name == op_type)


if __name__ == "__main__":
    main()
