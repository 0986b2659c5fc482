"""Gradient tests of array ops in the style of TensorFlow's array_ops_test,
concat_op_test, gather_op_test, pad_op_test: compute_gradient, then max_error
against a threshold, with tf.test's compute_gradient and with gradcheck's."""
import numpy as np
import pytest
import tensorflow as tf

from tests.tf_style.bindings import WithGradcheck, WithTF, gradcheck_error
from tests.tf_style.twins import dropped, scaled, twin

RNG = np.random.RandomState(11)
PARTS = [RNG.uniform(-1, 1, (2, n)) for n in (1, 3, 2)]
PARAMS = RNG.uniform(-1, 1, (5, 3))
INDICES = np.array([4, 0, 2, 0], np.int32)  # index 0 twice: its gradients add up
CUBE = RNG.uniform(-1, 1, (2, 3, 4))
SMALL = RNG.uniform(-1, 1, (2, 3))


def concat(a, b, c):
    return tf.concat([a, b, c], axis=1)


def gather(params):
    return tf.gather(params, INDICES)


def transpose(x):
    return tf.transpose(x, perm=[2, 0, 1])


def reflect_pad(x):
    return tf.pad(x, [[1, 1], [2, 1]], mode="REFLECT")


def tile(x):
    return tf.tile(x, [2, 3])


def slice_(x):
    return tf.slice(x, [0, 1, 1], [2, 2, 2])


def reverse(x):
    return tf.reverse(x, axis=[1])


class _ArrayGradients:
    """The tests; the subclasses below bind compute_gradient and max_error."""

    def testConcatThreeInputs(self):
        self.assertLess(self._error(concat, PARTS), 1e-8)

    def testGatherRepeatedIndices(self):
        self.assertLess(self._error(gather, [PARAMS]), 1e-8)

    def testTranspose(self):
        self.assertLess(self._error(transpose, [CUBE]), 1e-8)

    def testReflectPad(self):
        self.assertLess(self._error(reflect_pad, [SMALL]), 1e-8)

    def testTile(self):
        self.assertLess(self._error(tile, [SMALL]), 1e-8)

    def testSlice(self):
        self.assertLess(self._error(slice_, [CUBE]), 1e-8)

    def testReverse(self):
        self.assertLess(self._error(reverse, [CUBE]), 1e-8)


class ArrayGradientsWithTF(_ArrayGradients, WithTF, tf.test.TestCase):
    """The tests with tf.test.compute_gradient."""


class ArrayGradientsWithGradcheck(_ArrayGradients, WithGradcheck, tf.test.TestCase):
    """The same tests with gradcheck.compute_gradient."""


def _misplaced(shift):
    """The gradient moved by `shift` places along the last axis (an index bug)."""
    def mangle(grads, dy, xs):
        return [tf.roll(grads[0], shift, axis=-1)]
    return mangle


TWINS = {
    "concat, middle part's gradient dropped": (twin(concat, dropped(1)), PARTS, 1e-8),
    "gather, gradient x(1+1e-6)": (twin(gather, scaled(1 + 1e-6)), [PARAMS], 1e-8),
    "transpose, gradient misplaced": (twin(transpose, _misplaced(1)), [CUBE], 1e-8),
    "pad, gradient x(1+1e-7)": (twin(reflect_pad, scaled(1 + 1e-7)), [SMALL], 1e-8),
    "tile, gradient misplaced": (twin(tile, _misplaced(1)), [SMALL], 1e-8),
    "slice, gradient misplaced": (twin(slice_, _misplaced(1)), [CUBE], 1e-8),
    "reverse, gradient x1.01": (twin(reverse, scaled(1.01)), [CUBE], 1e-8),
}


@pytest.mark.parametrize("name", list(TWINS))
def test_broken_twin_fails_under_gradcheck(name):
    f, x, threshold = TWINS[name]
    assert gradcheck_error(f, x) > threshold
