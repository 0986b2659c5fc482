"""What went wrong at a perturbed input of the finite differences, in words that
name the input, the element and the step taken."""
import numpy as np

from gradcheck.errors import CheckSetupError
from gradcheck.execution import probes
from gradcheck.numerics import layout

_SHOWN = 3  # perturbed components named in one message


class PerturbedPoints:
    """The points the finite differences step to, around `inputs` (numpy arrays),
    named with `names`; `specs` are the differentiable outputs' OutputSpecs, or
    None to leave their shapes unchecked."""

    def __init__(self, inputs, names=None, specs=None):
        self.inputs, self.specs = inputs, specs
        self.names = names or [f"input {i}" for i in range(len(inputs))]

    def where(self, i, xi):
        """'x[2] + 0.001': the components of input i that `xi` moves, and by how much."""
        base = np.asarray(self.inputs[i])
        moved = layout.real_view(np.asarray(xi, dtype=base.dtype)).astype(np.float64)
        steps = moved - layout.real_view(base).astype(np.float64)
        changed = np.flatnonzero(steps)
        if not len(changed):
            return f"{self.names[i]} as given"
        shown = [f"{layout.component_label(self.names[i], base.shape, np.iscomplexobj(base), c)}"
                 f" {'+' if steps[c] > 0 else '-'} {abs(steps[c]):.3g}" for c in changed[:_SHOWN]]
        more = f" and {len(changed) - _SHOWN} more" if len(changed) > _SHOWN else ""
        return ", ".join(shown) + more

    def raised(self, i, xi, error):
        said = probes.reason(error).rstrip(":. ")
        return CheckSetupError(
            f"the function raised at a perturbed input of the finite differences, "
            f"{self.where(i, xi)} (the other inputs as given): {said}. The input is probably "
            "at an edge of the function's domain (an assertion, a square root at 0): move it "
            "away from the edge, or pass a smaller eps.")

    def shapes_agree(self, outputs, batched):
        """Whether every output has its shape at the inputs (after a batch axis)."""
        if self.specs is None:
            return True
        return all(tuple(np.shape(y))[1 if batched else 0:] == tuple(spec.shape)
                   for y, spec in zip(outputs, self.specs))

    def require_shapes(self, i, xi, outputs):
        if self.shapes_agree(outputs, batched=False):
            return
        spec, y = next((s, y) for s, y in zip(self.specs, outputs)
                       if tuple(np.shape(y)) != tuple(s.shape))
        raise CheckSetupError(
            f"{spec.name} has shape {tuple(spec.shape)} at the inputs but {tuple(np.shape(y))} at "
            f"a perturbed input of the finite differences, {self.where(i, xi)}: its shape "
            "depends on the input values (as with tf.unique, tf.boolean_mask or a one-argument "
            "tf.where), and finite differences need one shape. Check an output of fixed shape "
            "(padded, or reduced), or inputs away from where the shape changes.")
