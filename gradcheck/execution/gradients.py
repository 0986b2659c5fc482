"""Gradients as the modes take them: what they are taken with respect to,
None gradients made dense, and Jacobian columns from a VJP."""
from gradcheck import _tf


def gradient_sources(target, tensors, wrt):
    """What to differentiate with respect to: the input tensors, or for inputs
    that stand for a captured tf.Variable, the variable itself."""
    variables = getattr(target, "variable_slots", {})
    return [variables.get(i, tensors[i]) for i in wrt]


def dense_or_zeros(gradient, like):
    tf = _tf.tf()
    if gradient is None:
        return tf.zeros_like(like)
    return tf.convert_to_tensor(gradient)


class GradientSlots:
    """Densifies gradients inside traced code and remembers which were None."""

    def __init__(self):
        self.none_inputs = set()

    def dense(self, grads, like):
        tf = _tf.tf()
        out = []
        for position, (g, x) in enumerate(zip(grads, like)):
            if g is None:
                self.none_inputs.add(position)
                out.append(tf.zeros_like(x))
            else:
                out.append(tf.convert_to_tensor(g))
        return out


def columns_from_vjp(vjp_of, fixed_cotangents, tangents):
    """J v for each tangent v in the batch: `vjp_of(cotangents)` is differentiated
    with respect to the cotangents, inside a batch of `tf.vectorized_map`."""
    tf = _tf.tf()
    fixed = list(fixed_cotangents)
    with tf.GradientTape(persistent=True) as outer:
        outer.watch(fixed)
        grads = vjp_of(fixed)

    def one_column(v):
        columns = outer.gradient(grads, fixed, output_gradients=list(v),
                                 unconnected_gradients=tf.UnconnectedGradients.ZERO)
        return list(columns)

    return _tf.vectorized_map(one_column, list(tangents))
