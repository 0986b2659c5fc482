"""The evidence for each TensorFlow gradient benchmarks/scan_tf_ops.py finds
wrong, without gradcheck: tf.test.compute_gradient's theoretical against
numerical Jacobian (first order, and of the first-order gradient for order 2),
XLA against eager mode, or the error TensorFlow raises. A control op that is
right is measured beside each kind. One line per case.

    python benchmarks/scan_tf_ops_evidence.py     # about a minute
"""
import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import numpy as np
import tensorflow as tf

raw = tf.raw_ops
rng = np.random.default_rng(1)


def c(shape):
    """complex128, both parts of magnitude 0.2 to 0.9 and either sign."""
    return (rng.uniform(0.2, 0.9, shape) * rng.choice([-1, 1], shape)
            + 1j * rng.uniform(0.2, 0.9, shape) * rng.choice([-1, 1], shape))


def r(shape, low=0.2, high=0.9):
    return rng.uniform(low, high, shape)


def first(f, xs):
    """max |theoretical - numerical| of f's Jacobian."""
    theo, num = tf.test.compute_gradient(f, [tf.constant(x) for x in xs])
    return max(float(np.max(np.abs(t - n))) for t, n in zip(theo, num))


def grad_of(f, xs, wrt, jit=False):
    """x -> the gradient of <v, f(x, ...)> with respect to xs[wrt], v fixed."""
    out = f(*[tf.constant(x) for x in xs])
    v = tf.constant(c(out.shape) if out.dtype.is_complex else r(out.shape), out.dtype)

    def g(z):
        args = [tf.constant(x) for x in xs]
        args[wrt] = z
        with tf.GradientTape() as tape:
            tape.watch(args[wrt])
            y = f(*args)
        return tape.gradient(y, args[wrt], output_gradients=v)
    return tf.function(g, jit_compile=True) if jit else g


def second(f, xs, wrt=0):
    return first(grad_of(f, xs, wrt), [xs[wrt]])


def xla_against_eager(f, xs, wrt=0):
    """max |xla - eager| of the order-2 vector-Jacobian product (vector: ones)."""
    results, g = [], grad_of(f, xs, wrt)  # one cotangent v for both
    for jit in (False, True):
        def h(z):
            with tf.GradientTape() as tape:
                tape.watch(z)
                y = g(z)
            return tape.gradient(y, z, output_gradients=tf.ones_like(y))
        h = tf.function(h, jit_compile=True) if jit else h
        results.append(h(tf.constant(xs[wrt])).numpy())
    return float(np.max(np.abs(results[0] - results[1])))


def raised(fn):
    try:
        fn()
    except Exception as error:  # noqa: BLE001  (TensorFlow's message is the evidence)
        return f"raises {type(error).__name__}: {str(error).splitlines()[0][:110]}"
    return "runs"


def order2_raises(f, xs):
    return raised(lambda: second(f, xs))


def resize_xla(dtype):
    images = tf.constant(r((1, 2, 3, 1)), dtype)

    def g(x):
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = raw.ResizeBilinear(images=x, size=[3, 5])
        return tape.gradient(y, x, output_gradients=tf.ones_like(y))
    return float(np.max(np.abs(tf.function(g, jit_compile=True)(images).numpy().astype(float)
                               - g(images).numpy().astype(float))))


def gather_nd():
    x = tf.constant(r((3,)))
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = raw.GatherNd(params=x, indices=[1])
    return tape.gradient(y, x)


def two(f):
    return lambda x, y: f(x=x, y=y)


C23, LABELS = (2, 3), np.array([[0.2, 0.3, 0.5], [0.6, 0.1, 0.3]])
CASES = [
    ("Mul, complex128 (control)", lambda: first(two(raw.Mul), [c(C23), c(C23)])),
    ("Sign, complex128", lambda: first(lambda x: raw.Sign(x=x), [c(C23)])),
    ("MulNoNan, complex128", lambda: first(two(raw.MulNoNan), [c(C23), c(C23)])),
    ("SquaredDifference, complex128", lambda: first(two(raw.SquaredDifference),
                                                     [c(C23), c(C23)])),
    ("Xlogy, complex128", lambda: first(two(raw.Xlogy), [c(C23), c(C23)])),
    ("Xdivy, complex128", lambda: first(two(raw.Xdivy), [c(C23), c(C23)])),
    ("Xlog1py, complex128", lambda: first(two(raw.Xlog1py), [c(C23), c(C23)])),
    ("Cumprod, complex128", lambda: first(lambda x: raw.Cumprod(x=x, axis=1), [c(C23)])),
    ("EuclideanNorm, complex128", lambda: first(
        lambda x: raw.EuclideanNorm(input=x, axis=1), [c(C23)])),
    ("MatrixDeterminant, float64 (control)", lambda: first(
        lambda a: raw.MatrixDeterminant(input=a), [r((2, 2)) * [[1, -1], [1, 1]]])),
    ("MatrixDeterminant, complex128", lambda: first(
        lambda a: raw.MatrixDeterminant(input=a), [c((2, 2))])),
    ("LogMatrixDeterminant sign, complex128", lambda: first(
        lambda a: raw.LogMatrixDeterminant(input=a)[0], [c((2, 2))])),
    ("Zeta, float64", lambda: first(lambda x, q: raw.Zeta(x=x, q=q),
                                    [r(C23, 1.2, 1.9), r(C23)])),
    ("Betainc, float64", lambda: first(lambda a, b, x: raw.Betainc(a=a, b=b, x=x),
                                       [r(C23), r(C23), r(C23)])),
    ("PadV2, float64", lambda: first(
        lambda x, v: raw.PadV2(input=x, paddings=[[1, 1]], constant_values=v),
        [r((2,)), np.float64(0.5)])),
    ("SoftmaxCrossEntropyWithLogits loss (control)", lambda: first(
        lambda f, y: raw.SoftmaxCrossEntropyWithLogits(features=f, labels=y)[0],
        [r(C23), LABELS])),
    ("SoftmaxCrossEntropyWithLogits backprop", lambda: first(
        lambda f, y: raw.SoftmaxCrossEntropyWithLogits(features=f, labels=y)[1],
        [r(C23), LABELS])),
    ("order 2: Sin, complex128 (control)", lambda: second(lambda x: raw.Sin(x=x), [c(C23)])),
    ("order 2: Prod, complex128", lambda: second(lambda x: raw.Prod(input=x, axis=1), [c(C23)])),
    ("order 2, xla - eager: Sin, complex128 (control)", lambda: xla_against_eager(
        lambda x: raw.Sin(x=x), [c(C23)])),
    *[(f"order 2, xla - eager: {op}, complex128", lambda op=op: xla_against_eager(
        lambda x: getattr(raw, op)(x=x), [c(C23)]))
      for op in ("Sqrt", "Rsqrt", "Reciprocal", "Log", "Log1p", "Tan", "Asin", "Acos", "Atan",
                 "Atanh")],
    ("order 2, xla - eager: Angle, complex128", lambda: xla_against_eager(
        lambda x: raw.Angle(input=x, Tout=tf.float64), [c(C23)])),
    ("xla - eager: ResizeBilinear, float32 (control)", lambda: resize_xla(tf.float32)),
    ("xla - eager: ResizeBilinear, float64", lambda: resize_xla(tf.float64)),
    ("xla - eager: ResizeBilinear, float16", lambda: resize_xla(tf.float16)),
    ("GatherNd, one element of a vector", lambda: raised(gather_nd)),
    ("order 2: Lgamma, float16", lambda: order2_raises(
        lambda x: raw.Lgamma(x=x), [r(C23).astype(np.float16)])),
    ("order 2: Softsign, float64", lambda: order2_raises(
        lambda x: raw.Softsign(features=x), [r(C23)])),
    ("order 2: Igamma, float64", lambda: order2_raises(
        lambda a: raw.Igamma(a=a, x=tf.constant(r(C23))), [r(C23)])),
    ("order 2: Igammac, float64", lambda: order2_raises(
        lambda a: raw.Igammac(a=a, x=tf.constant(r(C23))), [r(C23)])),
    ("order 2: LRN, float32", lambda: order2_raises(
        lambda x: raw.LRN(input=x), [r((2, 2, 2, 2)).astype(np.float32)])),
]


def main():
    for name, measure in CASES:
        value = measure()
        shown = f"{value:.3g}" if isinstance(value, float) else value
        print(f"| {name} | {shown} |")


if __name__ == "__main__":
    main()
