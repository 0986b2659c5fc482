"""`compute_gradient` and `max_error`: drop-ins for `tf.test.compute_gradient` and
gradient_checker_v2's `max_error`, so a TensorFlow-style test switches to
gradcheck's finite differences by changing one import.

The layout is TensorFlow's: one (y_size, x_size) array per argument, in the
argument's real dtype, a complex element counting as two real components (real,
then imaginary) along either axis. The theoretical Jacobian is TensorFlow's
gradient, taken with a tape one unit cotangent per row as TensorFlow's is; the
numerical one is gradcheck's reference: Richardson-extrapolated central
differences, in float64 when the function takes it, with a step per element.
"""
import numpy as np

from gradcheck import _tf
from gradcheck.errors import OptionError
from gradcheck.execution import evaluator, probes
from gradcheck.execution.devices import CPU
from gradcheck.execution.eager_runner import EagerRunner
from gradcheck.execution.inputs import normalise_inputs, require_finite_inputs
from gradcheck.execution.outputs import flat_function, output_specs
from gradcheck.jacobian.analytic import analytic_jacobian
from gradcheck.numerics import finite_differences, layout

_ROWS_PER_BATCH = 1024  # unit cotangents per vectorised VJP call


def compute_gradient(f, x, delta=None):
    """(theoretical Jacobians, numerical Jacobians), one 2-d array per element of `x`.

    f: takes one tensor per element of `x`, returns one tensor.
    x: a list or tuple of values convertible to tensors (floating or complex).
    delta: the finite-difference step, relative to max(|x|, 1) for each element
        (so absolute, as in TensorFlow, for elements within [-1, 1]). None (the
        default) chooses a step per element from the dtype, as check_gradients does;
        TensorFlow's own default is an absolute 1/1024.
    """
    if not isinstance(x, (list, tuple)):
        raise OptionError(
            "x must be a list or tuple with one value per argument of f (as for "
            f"tf.test.compute_gradient), got {type(x).__name__}. For one argument, pass [x].")
    probes.require_eager_execution("compute_gradient")
    arguments = normalise_inputs(f, list(x))
    _require_floating(arguments)
    require_finite_inputs(arguments)
    target = flat_function(f)
    with _tf.quiet_logs():
        values = probes.probe(target, [a.value for a in arguments])
        spec = _only_output(f, output_specs(target.output_names, values))
        wrt = tuple(range(len(arguments)))
        theoretical = _theoretical(target, arguments, wrt, spec)
        numerical = _numerical(target, arguments, wrt, spec, values, delta)
    dtypes = [layout.real_numpy_dtype(a.value.dtype) for a in arguments]
    return (tuple(j.astype(d) for j, d in zip(theoretical, dtypes)),
            tuple(j.astype(d) for j, d in zip(numerical, dtypes)))


def max_error(grad1, grad2):
    """The largest elementwise |grad1 - grad2| over two lists of Jacobians (0 if all are empty)."""
    error = 0
    for first, second in zip(grad1, grad2):
        first, second = np.asarray(first), np.asarray(second)
        if first.size or second.size:
            error = np.maximum(error, np.fabs(first - second).max())
    return error


def _theoretical(target, arguments, wrt, spec):
    """TensorFlow's gradient, one unit cotangent per row, eagerly under a tape."""
    rows = spec.real_size
    batch = max(1, min(rows, _ROWS_PER_BATCH))
    run = EagerRunner("eager", target, [a.value for a in arguments], wrt, (0,), CPU, batch)
    blocks = analytic_jacobian(run, arguments, wrt, [spec], np.ones(rows), batch)
    return [blocks[(0, i)] for i in wrt]


def _numerical(target, arguments, wrt, spec, values, delta):
    """gradcheck's reference: Richardson extrapolation, in float64 where f takes it."""
    wide, _, at_inputs, computed_in = probes.reference_inputs(target, arguments, values)
    evaluate = evaluator.batched_evaluator(target, wide, (0,), CPU, [a.name for a in arguments],
                                           [spec])
    reference = finite_differences.numeric_jacobian(evaluate, wide, wrt, [spec], [at_inputs[0]],
                                                    delta, precision=computed_in)
    return [reference.blocks[(0, i)] for i in wrt]


def _require_floating(arguments):
    for a in arguments:
        if not a.differentiable:
            raise OptionError(
                f"argument {a.name} is {a.dtype}: compute_gradient differentiates with respect "
                "to every element of x, which must be floating-point or complex (as for "
                "tf.test.compute_gradient). Close over integer arguments in f instead, e.g. "
                "lambda params: tf.gather(params, indices).")


def _only_output(f, specs):
    if len(specs) != 1:
        raise OptionError(
            f"f returned {len(specs)} tensors; compute_gradient, like tf.test.compute_gradient, "
            "differentiates one output. Return one tensor (or use gradcheck.check_gradients, "
            "which checks nests of outputs).")
    if not specs[0].differentiable:
        raise OptionError(
            f"f returned a {specs[0].dtype} tensor, which has no gradient: return a "
            "floating-point or complex tensor.")
    return specs[0]
