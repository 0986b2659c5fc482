"""Inputs declared to get no gradient (no_gradient_for=): in every mode that
was checked, the gradient with respect to them must be None."""
import numpy as np

from gradcheck.execution import modes as execution_modes
from gradcheck.execution import probes
from gradcheck.execution.devices import short_name
from gradcheck.execution.targets import random_cotangent
from gradcheck.numerics import dtypes
from gradcheck.report import NO_GRADIENT, PairResult


def check_declared_none(problem, options, target_for, declared, findings):
    """One VJP per checked mode, taken with respect to the `declared` positions."""
    checked = {(m.device, m.mode) for m in findings.modes
               if m.status == "checked" and m.order == problem.order}
    cotangents = [random_cotangent(spec, options.rng).astype(dtypes.numpy_dtype(spec.dtype))[None]
                  for spec in problem.diff_specs]
    for device in options.devices:
        for mode in options.modes:
            where = (short_name(device), mode)
            if where in checked:
                none, grads, error = _gradient_of(mode, target_for(mode), problem, declared,
                                                  device, cotangents)
                findings.pairs.extend(_pair(problem, i, where, position in none,
                                            grads[position] if grads else None, error)
                                      for position, i in enumerate(declared))


def _gradient_of(mode, target, problem, declared, device, cotangents):
    """(positions whose gradient is None, the dense gradients, the error raised or '')."""
    run = execution_modes.runner(mode, target, problem.values, declared, problem.out_index,
                                 device, 1)
    try:
        run.start()
        grads = run.vjp(cotangents)
    except Exception as error:  # noqa: BLE001  (what the gradient raised is the finding)
        return set(), None, probes.reason(error)
    finally:
        run.close()
    return set(run.none_inputs), grads, ""


def _pair(problem, i, where, is_none, grad, error):
    x = problem.inputs[i]
    largest = 0.0 if grad is None else float(np.max(np.abs(grad), initial=0.0))
    return PairResult(
        device=where[0], mode=where[1], order=problem.order,
        output=", ".join(s.name for s in problem.diff_specs), input=x.name, against=NO_GRADIENT,
        dtype=x.dtype, output_shape=(), input_shape=x.shape, atol=0.0, rtol=0.0, n_total=1,
        n_failed=0 if is_none else 1, n_unreliable=0, max_abs_error=largest, max_rel_error=0.0,
        worst_output="(all outputs)", worst_input=x.name, worst_actual=largest,
        worst_expected=0.0, gradient_is_none=is_none, unresolved=error)
