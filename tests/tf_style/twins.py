"""Deliberately broken twins of an op: its own forward pass, with a
tf.custom_gradient that mangles the gradient the op registers."""
import tensorflow as tf


def twin(op, mangle):
    """`op` whose gradient is mangle(grads, dy, xs): grads are op's true
    gradients (a list, one per input), dy the upstream gradient."""

    @tf.custom_gradient
    def broken(*xs):
        with tf.GradientTape(persistent=True) as tape:
            tape.watch(xs)
            y = op(*xs)

        def gradient(dy):
            grads = tape.gradient(y, xs, output_gradients=dy)
            return mangle(list(grads), dy, xs)

        return y, gradient

    return broken


def scaled(factor, which=0):
    """The gradient of input `which` times `factor`."""
    def mangle(grads, dy, xs):
        grads[which] = tf.convert_to_tensor(grads[which]) * factor  # IndexedSlices too
        return grads
    return mangle


def dropped(which):
    """No gradient for input `which` (a forgotten term)."""
    def mangle(grads, dy, xs):
        grads[which] = tf.zeros_like(xs[which])
        return grads
    return mangle


def swapped(grads, dy, xs):
    """The two inputs' gradients exchanged (same shapes)."""
    return grads[::-1]


def negated(which):
    def mangle(grads, dy, xs):
        grads[which] = -grads[which]
        return grads
    return mangle
