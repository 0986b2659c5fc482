"""Complex Jacobians follow TensorFlow's own convention: the one
tf.test.compute_gradient uses (complex numbers as pairs of reals)."""
import numpy as np
import pytest
import tensorflow as tf

from gradcheck.execution import evaluator, modes
from gradcheck.execution.inputs import normalise_inputs
from gradcheck.execution.outputs import FlatFunction, output_specs
from gradcheck.jacobian import analytic
from gradcheck.numerics import finite_differences as numeric

rng = np.random.default_rng(3)
Z = rng.normal(size=(2, 3)) + 1j * rng.normal(size=(2, 3))

COMPLEX_FUNCTIONS = {
    "square": lambda z: z * z,
    "conj": tf.math.conj,
    "exp": tf.exp,
    "abs": lambda z: tf.cast(tf.abs(z), tf.complex128),
    "matmul": lambda z: tf.matmul(z, z, adjoint_b=True),
    "real part": lambda z: tf.math.real(z * z),
}


def gradcheck_jacobians(fn, value):
    inputs = normalise_inputs(fn, [value])
    flat = FlatFunction(fn)
    run = modes.runner("eager", flat, [value], [0], [0], "/device:CPU:0", batch_size=64)
    specs = output_specs(flat.output_names, run.forward())
    scales = analytic.row_scales(specs[0].real_size, np.random.default_rng(0))
    theoretical = analytic.analytic_jacobian(run, inputs, [0], specs, scales, 64)[(0, 0)]
    evaluate = evaluator.batched_evaluator(flat, [value], [0], "/device:CPU:0")
    numerical = numeric.numeric_jacobian(evaluate, [value], [0], specs, run.forward())
    return theoretical, numerical.blocks[(0, 0)]


@pytest.mark.parametrize("name", list(COMPLEX_FUNCTIONS))
def test_complex_jacobians_match_tensorflows_gradient_checker(name):
    fn = COMPLEX_FUNCTIONS[name]
    ours_theoretical, ours_numeric = gradcheck_jacobians(fn, Z)
    (tf_theoretical,), (tf_numeric,) = tf.test.compute_gradient(fn, [tf.constant(Z)])
    assert ours_theoretical.shape == tf_theoretical.shape
    np.testing.assert_allclose(ours_theoretical, tf_theoretical, rtol=1e-12, atol=1e-12)
    # TensorFlow's fixed step of 1/1024 is the less accurate of the two.
    np.testing.assert_allclose(ours_numeric, tf_numeric, atol=1e-4)
    np.testing.assert_allclose(ours_numeric, ours_theoretical, atol=1e-9)


@pytest.mark.parametrize("fn, extra", [
    (lambda z, i: tf.gather(z, i), np.array([1, 0], dtype=np.int32)),
    (lambda z, axis: tf.cumsum(z, axis=axis), np.array(1, dtype=np.int32)),
], ids=["gather", "cumsum"])
def test_a_complex_function_with_an_integer_input_is_checked_in_graph_mode(fn, extra):
    # Found by the scan: graph mode's check that integer inputs get no gradient
    # called tf.gradients without grad_ys, which complex outputs require.
    from gradcheck import check_gradients

    report = check_gradients(fn, [Z, extra], modes=["graph"])
    assert [m.status for m in report.modes] == ["checked"]
