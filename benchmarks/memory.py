"""Fast mode's peak memory as a multiple of the input's bytes, side by side
with one tf.function forward + backward pass of the same function, in one run.

Each measurement runs in a process of its own: TensorFlow is imported and a
tiny check warms it up, the resident memory then is the baseline, and the
peak (ru_maxrss) after the measured call, less the baseline, is its cost.
Function: elementwise sin(x) exp(x / 4), modes=["function"], method="fast".

    python benchmarks/memory.py                      # 10^6 and 10^7, about 1 minute
    GRADCHECK_BENCH_MEMORY_SIZES=1000000,10000000,100000000 python benchmarks/memory.py
"""
import json
import os
import subprocess
import sys

SIZES = [int(s) for s in os.environ.get("GRADCHECK_BENCH_MEMORY_SIZES",
                                        "1000000,10000000").split(",")]

CHILD = r"""
import json, os, resource, sys, time
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
import numpy as np
import tensorflow as tf
from gradcheck import check_gradients

what, n, dtype = sys.argv[1], int(sys.argv[2]), sys.argv[3]
sys.path.insert(0, sys.argv[4])
from speed import cold_forward_backward

def fn(x):
    return tf.sin(x) * tf.exp(x / 4)

def resident():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")

check_gradients(fn, [np.linspace(-1, 1, 8).astype(dtype)], modes=["function"], method="fast")
x = np.random.default_rng(0).uniform(-1, 1, n).astype(dtype)
baseline = resident()
start = time.perf_counter()
if what == "check":
    check_gradients(fn, [x], modes=["function"], method="fast")
else:
    cold_forward_backward(fn, x, jit=False)
seconds = time.perf_counter() - start
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
print(json.dumps({"peak": peak - baseline, "input": x.nbytes, "seconds": seconds}))
"""


def measure(what, n, dtype):
    here = os.path.dirname(os.path.abspath(__file__))
    out = subprocess.run([sys.executable, "-c", CHILD, what, str(n), dtype, here], check=True,
                         capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def main():
    print("| n | dtype | input | fast check peak | multiple | forward + backward peak | multiple "
          "| check / pass |")
    print("|---|---|---|---|---|---|---|---|")
    for n in SIZES:
        for dtype in ("float32", "float64"):
            check, single = measure("check", n, dtype), measure("pass", n, dtype)
            mb = 1e6
            print(f"| {n:.0e} | {dtype} | {check['input'] / mb:.0f} MB | {check['peak'] / mb:.0f} MB "
                  f"| {check['peak'] / check['input']:.1f}x | {single['peak'] / mb:.0f} MB "
                  f"| {single['peak'] / single['input']:.1f}x | {check['peak'] / single['peak']:.1f}x |",
                  flush=True)


if __name__ == "__main__":
    main()
