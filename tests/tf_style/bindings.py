"""The one difference between a TF-style test class's two runs: which
compute_gradient and max_error it binds (tf.test's, or gradcheck's)."""
import tensorflow as tf
from tensorflow.python.ops import gradient_checker_v2

import gradcheck


class _Checker:
    def _error(self, f, x):
        """max_error between the bound compute_gradient's two Jacobians."""
        return self.max_error(*self.compute_gradient(f, x))


class WithTF(_Checker):
    compute_gradient = staticmethod(tf.test.compute_gradient)
    max_error = staticmethod(gradient_checker_v2.max_error)


class WithGradcheck(_Checker):
    compute_gradient = staticmethod(gradcheck.compute_gradient)
    max_error = staticmethod(gradcheck.max_error)


def gradcheck_error(f, x):
    """max_error of gradcheck's compute_gradient: what a broken twin must exceed."""
    return gradcheck.max_error(*gradcheck.compute_gradient(f, x))
