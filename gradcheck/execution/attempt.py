"""Running one mode on one device: its outcome (checked, skipped or failed,
with the reason) and what the report should say about how it ran."""
import numpy as np

from gradcheck.errors import CheckSetupError
from gradcheck.execution import failures, probes, sources
from gradcheck.execution import modes as execution_modes
from gradcheck.execution.devices import short_name
from gradcheck.execution.failures import GradientShapeError
from gradcheck.execution.targets import random_cotangent
from gradcheck.numerics import dtypes


def run_mode(problem, mode, target, device, measure, findings):
    """(what `measure(run, where)` returns, the ModeResult, the inputs whose
    gradient was None), or None if the mode was skipped or failed."""
    where = (short_name(device), mode)
    try:
        run = execution_modes.runner(mode, target, problem.values, problem.wrt,
                                     problem.out_index, device, problem.batch)
        run.start()
    except Exception as error:  # noqa: BLE001  (any failure of the forward pass: skip the mode)
        _forward_failed(problem, where, error, findings)
        return None
    try:
        measured = measure(run, where)
    except GradientShapeError as error:
        findings.mode(*where, problem.order, "failed", str(error))
        return None
    except CheckSetupError:
        raise
    except Exception as error:  # noqa: BLE001  (whatever the gradient raised is the finding)
        _gradient_failed(problem, where, error, run.forward_error(), findings)
        return None
    finally:
        run.close()
    moved = run.placement.fallback_reason() if run.placement else ""
    if moved:
        findings.mode(*where, problem.order, "skipped", moved)
        return None
    placed = run.placement.summary() if run.placement else ""
    result = findings.mode(*where, problem.order, "checked", placed=placed)
    _note_how_it_ran(problem, run, where, findings)
    return measured, result, set(run.none_inputs)


def _gradient_failed(problem, where, error, forward_error, findings):
    if forward_error is not None:
        _forward_failed(problem, where, forward_error, findings)
        return
    status = "skipped" if failures.is_unsupported(error) else "failed"
    findings.mode(*where, problem.order, status,
                  failures.gradient_reason(error, problem.wrt_inputs))


def _forward_failed(problem, where, error, findings):
    """A mode whose forward pass cannot run is skipped, with the reason."""
    if isinstance(error, CheckSetupError):
        raise error
    if isinstance(error, sources.ModeNotApplicable):
        findings.mode(*where, problem.order, "skipped", f"not applicable: {error}")
    else:
        findings.mode(*where, problem.order, "skipped",
                      "the forward pass cannot run here: " + probes.reason(error))


def _note_how_it_ran(problem, run, where, findings):
    device_name, mode = where
    place = f"{mode} mode on {device_name}"
    if run.traced_differs:
        findings.note(
            f"{place}: the gradient computed in a tf.function differs from the one computed "
            "eagerly (the gradient code branches on tf.executing_eagerly() or "
            "tf.inside_function()), so eager mode was checked one row at a time, eagerly.")
    elif run.vectorization_failed:
        findings.note(f"{place}: tf.vectorized_map could not batch the gradient, "
                      "so it was computed one Jacobian row at a time.")
    for position in sorted(run.none_inputs):
        findings.note(f"{place}: the gradient with respect to "
                      f"{problem.inputs[problem.wrt[position]].name} is None "
                      "(not connected); it was compared as zeros.")
    for i in getattr(run, "integer_inputs_with_gradient", []):
        x = problem.inputs[i]
        if x.differentiable:  # a float input left out by wrt= may well have a gradient
            continue
        findings.mode(device_name, mode, problem.order, "failed",
                      f"{x.name} is {x.dtype} but tf.gradients returned a gradient for it; a "
                      "gradient function should return None for integer inputs.")


def vjp_spread(problem, mode, target, device):
    """The largest difference between two VJPs of the same random cotangents,
    or None if they are equal (or cannot be run again)."""
    try:
        run = execution_modes.runner(mode, target, problem.values, problem.wrt,
                                     problem.out_index, device, problem.batch)
    except Exception:  # noqa: BLE001  (it ran before: nothing to add if it cannot now)
        return None
    # One row where a batch would be traced anew (tf.function mode and XLA
    # reuse the batch they traced for the Jacobian).
    run.row_by_row = run.row_by_row or mode in ("eager", "graph")
    cotangents = _repeated_cotangents(problem.diff_specs, 1 if run.row_by_row else problem.batch)
    try:
        run.start()
        first, second = run.vjp(cotangents), run.vjp(cotangents)
    except Exception:  # noqa: BLE001  (as above: a rerun that fails adds nothing)
        return None
    finally:
        run.close()
    if all(np.array_equal(a, b, equal_nan=True) for a, b in zip(first, second)):
        return None
    with np.errstate(invalid="ignore"):
        return max(float(np.nanmax(np.abs(a - b), initial=0.0)) for a, b in zip(first, second))


def _repeated_cotangents(specs, rows):
    """One random cotangent per output, repeated `rows` times (a leading batch axis)."""
    rng = np.random.default_rng(0)
    return [np.broadcast_to(random_cotangent(spec, rng).astype(dtypes.numpy_dtype(spec.dtype)),
                            (rows,) + tuple(spec.shape)).copy() for spec in specs]
