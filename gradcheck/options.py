"""`check_gradients`' options, validated once into a frozen object."""
import dataclasses
import numbers

import numpy as np

from gradcheck import _tf
from gradcheck.errors import OptionError
from gradcheck.execution import modes as execution_modes
from gradcheck.execution import sources
from gradcheck.execution.devices import resolve_devices
from gradcheck.numerics.compare import checked_tolerance

METHODS = ("auto", "full", "fast")

DEFUN_NOTE = ("function.Defun is graph-only: eager code cannot call it, and a GradientTape "
              "under tf.function gets no gradient for it, so only graph mode is checked. Pass "
              "modes= to see the others.")


@dataclasses.dataclass(frozen=True)
class Options:
    devices: tuple  # TensorFlow device names
    modes: tuple
    method: str  # as asked: "auto", "full" or "fast"
    order: int
    atol: object  # None, a number, or {dtype name: number}
    rtol: object
    eps: float  # None: chosen per element
    seed: int
    # The check's random numbers: the field never changes, the stream advances.
    rng: np.random.Generator
    reference: object  # the declared VJP, or None
    override_map: dict
    forward_mode: bool
    strict: bool
    raise_on_failure: bool
    # The mode finite differences run in: with an override map, or for a Defun
    # (a tape under tf.function gets no gradient for it), they must
    # differentiate the way graph mode does (tf.gradients), for order 2.
    reference_mode: str
    notes: tuple  # what the report should say about the options chosen
    wrt: tuple = None  # names or argument indices of the inputs to differentiate; None: all
    no_gradient_for: tuple = ()  # names or argument indices whose gradient must be None


def validated_options(fn, *, modes, devices, method, order, atol, rtol, eps, seed,
                      raise_on_failure, reference, override_map, forward_mode, strict,
                      wrt=None, no_gradient_for=None):
    _require_valid(method, order, eps, reference, forward_mode)
    wrt = input_selection("wrt", wrt)
    no_gradient_for = input_selection("no_gradient_for", no_gradient_for) or ()
    _require_seed(seed)
    atol, rtol = checked_tolerance("atol", atol), checked_tolerance("rtol", rtol)
    eps = None if eps is None else float(eps)
    override_map = sources.validate_override_map(override_map)
    defun = _tf.is_defun(fn)
    graph_only = modes is None and defun
    return Options(
        devices=tuple(resolve_devices(devices)),
        modes=("graph",) if graph_only else tuple(execution_modes.resolve_modes(modes)),
        method=method, order=order, atol=atol, rtol=rtol, eps=eps, seed=seed,
        rng=check_rng(seed), reference=reference, override_map=override_map,
        forward_mode=bool(forward_mode), strict=strict, raise_on_failure=raise_on_failure,
        reference_mode="graph" if override_map or defun else "function",
        notes=(DEFUN_NOTE,) if graph_only else (), wrt=wrt, no_gradient_for=no_gradient_for,
    )


def input_selection(option, value):
    """`value` (a name, an argument index, or a list of them) as a tuple, or None."""
    if value is None:
        return None
    items = [value] if isinstance(value, (str, numbers.Integral)) else value
    if not isinstance(items, (list, tuple, set, frozenset)):
        raise OptionError(f"{option} must name inputs: a name or argument index, or a list of "
                          f"them such as ['x'] or [0], got {value!r}.")
    items = list(items)
    bad = [v for v in items if isinstance(v, bool) or not isinstance(v, (str, numbers.Integral))]
    if bad:
        raise OptionError(f"{option}={value!r}: {bad[0]!r} is neither an input's name nor an "
                          "argument index (an int).")
    return tuple(dict.fromkeys(v if isinstance(v, str) else int(v) for v in items))


def selected_positions(option, selection, check_inputs, n_arguments):
    """The positions in `check_inputs` that `selection` names: an int is an
    argument's index, a string an argument's or a captured variable's name."""
    names = {x.name: i for i, x in enumerate(check_inputs)}
    unknown = [v for v in selection if (v not in names if isinstance(v, str)
                                        else not -n_arguments <= v < n_arguments)]
    if unknown:
        raise OptionError(
            f"{option}={list(selection)!r} names {', '.join(map(repr, unknown))}, which is no "
            f"input of the function: its inputs are {', '.join(map(repr, names))} (or argument "
            f"indices 0 to {n_arguments - 1}).")
    return tuple(sorted({names[v] if isinstance(v, str) else v % n_arguments for v in selection}))


def check_rng(seed):
    """The check's random numbers (cotangents, projections). Not
    default_rng(seed) itself: inputs drawn from that, as users and the command
    line draw them, would be the very numbers the cotangents are made of."""
    return np.random.default_rng([seed, 0x67726164])


def require_method(method):
    if not isinstance(method, str) or method not in METHODS:
        raise OptionError(f"unknown method {method!r}; choose from {', '.join(METHODS)}.")


def _require_valid(method, order, eps, reference, forward_mode):
    require_method(method)
    if isinstance(order, bool) or order not in (1, 2) or not isinstance(order, numbers.Integral):
        raise OptionError(f"order must be 1 or 2 (an int), got {order!r}.")
    _require_eps(eps)
    if reference is not None and not callable(reference):
        raise OptionError("reference must be a callable: reference(*inputs, *upstream_grads) -> grads.")
    if method == "fast" and reference is not None:
        raise OptionError("reference= needs the full Jacobian: use method='full' (or 'auto').")
    if method == "fast" and forward_mode:
        raise OptionError("forward_mode=True compares whole Jacobians, which fast mode does not "
                          "build: use method='full' (or 'auto'), or leave forward_mode off.")


def _require_eps(eps):
    if eps is None:
        return
    if isinstance(eps, bool) or not isinstance(eps, numbers.Real) or not 0 < eps < 1:
        raise OptionError(f"eps is a relative step and must be a number in (0, 1), got {eps!r}; "
                          "or leave it None to choose the step per element.")
    if eps < np.finfo(np.float64).eps:
        raise OptionError(f"eps={eps!r} is below float64's resolution ({np.finfo(np.float64).eps:.1e}): "
                          "the perturbed inputs would equal the inputs. Use eps >= 1e-12, or leave "
                          "it None to choose the step per element.")


def _require_seed(seed):
    if isinstance(seed, bool) or not isinstance(seed, numbers.Integral) or seed < 0:
        raise OptionError(f"seed must be an integer >= 0, got {seed!r}; the same seed gives the "
                          "same cotangents, so a report can be reproduced.")
