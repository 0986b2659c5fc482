"""The Python side of the example custom ops: build, load, register gradients.

This is what an op author ships next to the C++ kernels.
"""
import pathlib

import tensorflow as tf

from gradcheck import build_op_library

HERE = pathlib.Path(__file__).parent
library = build_op_library([HERE / "cube_op.cc", HERE / "roll_and_sum_op.cc"], name="example_ops")

cube = library.cube
roll_and_sum = library.roll_and_sum
cube_no_gradient = library.cube_no_gradient
cube_without_gradient = library.cube_without_gradient


@tf.RegisterGradient("Cube")
def _cube_grad(op, grad):
    """One output: the gradient function gets (op, grad)."""
    x = op.inputs[0]
    return grad * 3.0 * x * x


@tf.RegisterGradient("RollAndSum")
def _roll_and_sum_grad(op, grad_rolled, grad_total):
    """Two outputs: (op, *grads); one gradient per input, None for the integer shift."""
    shift = op.inputs[1]
    dx = tf.roll(grad_rolled, shift=-shift, axis=0) + grad_total
    return [dx, None]


tf.no_gradient("CubeNoGradient")


# Gradients that are wrong on purpose, to be swapped in with gradient_override_map.
@tf.RegisterGradient("CubeGradForgetsTheSquare")
def _cube_grad_forgets_the_square(op, grad):
    return grad * 3.0 * op.inputs[0]


@tf.RegisterGradient("CubeStraightThrough")
def _cube_straight_through(op, grad):
    """A straight-through estimator: pretend the op is the identity."""
    return grad
