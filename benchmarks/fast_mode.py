"""Fast mode at 10^6 elements: the cost of a check as a multiple of one forward
plus one backward pass of the same function, measured in one run."""
import os
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import numpy as np
import tensorflow as tf

from gradcheck import check_gradients

N = int(os.environ.get("GRADCHECK_BENCH_FAST_SIZE", "1000000"))


def function(x):
    return tf.sin(x) * tf.exp(x / 4)


@tf.function
def forward_backward(x):
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = function(x)
    return tape.gradient(y, x, output_gradients=tf.ones_like(y))


def seconds(call, *args, repeat=1, **kwargs):
    start = time.perf_counter()
    for _ in range(repeat):
        call(*args, **kwargs)
    return (time.perf_counter() - start) / repeat


def one_pass(tensor):
    return forward_backward(tensor).numpy()


def main():
    for dtype in ("float32", "float64"):
        x = np.random.default_rng(0).uniform(-1, 1, size=N).astype(dtype)
        tensor = tf.constant(x)
        forward_backward(tensor)  # traced once, then timed
        single = seconds(one_pass, tensor, repeat=5)
        cold_function = lambda y: function(y)  # noqa: E731  (a new function: nothing cached)
        cold = seconds(check_gradients, cold_function, [x], method="fast", modes=["function"])
        warm = seconds(check_gradients, cold_function, [x], method="fast", modes=["function"])
        print(f"{dtype}, n={N}: forward+backward {single * 1000:.1f} ms; fast check "
              f"{cold * 1000:.0f} ms cold (x{cold / single:.1f}), {warm * 1000:.0f} ms with "
              f"traces reused (x{warm / single:.1f})", flush=True)


if __name__ == "__main__":
    main()
