"""What each mode differentiates: the function itself, the function where an
override map is honoured, or (for order 2) the function's gradient."""
import numpy as np

from gradcheck import _tf
from gradcheck.execution import modes as execution_modes
from gradcheck.execution import sources
from gradcheck.numerics import layout
from gradcheck.numerics.weights import signed_weights


def only_where_honoured(target_for, override_map):
    """Modes that use a GradientTape never see an override map: not applicable there."""
    if not override_map:
        return target_for

    def honoured(mode):
        if execution_modes.uses_tape(mode):
            return sources.NotApplicable(sources.OVERRIDE_IGNORED_BY_TAPES)
        return target_for(mode)

    return honoured


def gradient_targets(first, problem, rng):
    """target_for(mode): the VJPs of `first` for a fixed random cotangent, as a
    function of the inputs. Checking it is the second-order check, the way
    torch's gradgradcheck and JAX's check_grads recurse."""
    cotangents = [random_cotangent(spec, rng) for spec in problem.diff_specs]
    names = [f"grad {x.name}" for x in problem.wrt_inputs]

    def target_for(mode):
        return GradientTarget(mode, first, problem.wrt, problem.out_index, cotangents, names)

    return target_for


class GradientTarget:
    """The gradient of `first` in one mode, callable like a target."""

    def __init__(self, mode, first, wrt, out_index, cotangents, names):
        self.mode, self.first, self.wrt, self.out_index = mode, first, wrt, out_index
        self.cotangents, self.output_names = cotangents, names
        self.variable_slots = getattr(first, "variable_slots", {})

    def __call__(self, tensors):
        tf = _tf.tf()
        return execution_modes.vjp_inline(self.mode, self.first, tensors, self.wrt, self.out_index,
                                          [tf.constant(c) for c in self.cotangents])


def random_cotangent(spec, rng):
    """A cotangent for output `spec` (complex if it is), in float64 precision."""
    real = signed_weights(rng, spec.real_size)
    dtype = np.complex128 if spec.is_complex else np.float64
    return layout.from_real_view(real[None], dtype, spec.shape)[0]
