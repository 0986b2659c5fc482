"""Gradient sources that need more than calling the function: override maps,
legacy Defuns, and gradients declared on purpose (surrogates)."""
import numpy as np

from gradcheck import _tf
from gradcheck.errors import CheckSetupError, OptionError
from gradcheck.execution.gradients import GradientSlots
from gradcheck.execution.runner import TracedRunner


class ModeNotApplicable(Exception):
    """The gradient source has no meaning in this mode (not a failure)."""


OVERRIDE_IGNORED_BY_TAPES = (
    "TensorFlow's GradientTape ignores gradient_override_map (in eager code and inside "
    "tf.function alike: it looks gradients up by op type), so only tf.gradients, in graph "
    "mode, uses the overridden gradient")


class OverriddenTarget:
    """Runs a target under `Graph.gradient_override_map`. Only tf.gradients
    honours the map: in a v1 graph, and inside tf.function."""

    def __init__(self, target, override_map):
        self.target = target
        self.override_map = dict(override_map)
        self.variable_slots = getattr(target, "variable_slots", {})

    @property
    def output_names(self):
        return self.target.output_names

    def __call__(self, tensors):
        tf = _tf.tf()
        with tf.compat.v1.get_default_graph().gradient_override_map(self.override_map):
            return self.target(tensors)


class VariableTarget:
    """The function with its captured variables as extra inputs: each call first
    assigns the values given for them, so finite differences can perturb them,
    and gradients are taken with respect to the variables themselves."""

    def __init__(self, target, n_arguments, variable_inputs):
        self.target = target
        self.n_arguments = n_arguments
        self.variable_slots = {n_arguments + j: x.variable for j, x in enumerate(variable_inputs)}
        # Traces for this check only (a new target is built for every check):
        # the probes, function mode and the finite differences share them.
        self.compiled = {}

    @property
    def output_names(self):
        return self.target.output_names

    def __call__(self, tensors):
        for i, variable in self.variable_slots.items():
            variable.assign(tensors[i])
        return self.target(tensors[: self.n_arguments])


class NotApplicable:
    """Stands for the function in a mode where its gradient source means nothing."""

    output_names = None

    def __init__(self, reason):
        self.reason = reason

    def __call__(self, tensors):
        raise ModeNotApplicable(self.reason)


def validate_override_map(override_map):
    if override_map is None:
        return None
    if not isinstance(override_map, dict) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in override_map.items()):
        raise OptionError("override_map must be a dict from op type to registered gradient name, "
                        "e.g. {'Square': 'MySquareGrad'}.")
    for op_type, gradient_name in override_map.items():
        try:
            _tf.gradient_registry().lookup(gradient_name)
        except LookupError:
            raise CheckSetupError(
                f"override_map maps {op_type!r} to {gradient_name!r}, but no gradient is "
                f"registered under that name; register it with @tf.RegisterGradient("
                f"{gradient_name!r}) first.") from None
    return override_map


class DeclaredGradient(TracedRunner):
    """The VJPs of a user's `reference(*inputs, *upstream_grads) -> grads`,
    batched like a mode's so the two Jacobians line up row for row."""

    def __init__(self, reference, inputs, wrt, device, describe):
        tf = _tf.tf()
        self.reference, self.wrt, self.n_inputs = reference, wrt, len(inputs)
        self.device, self.describe = device, describe
        with tf.device(device):
            self.tensors = [tf.constant(v) for v in inputs]
        self.slots = GradientSlots()
        self._vjp = tf.function(
            lambda xs, cts: _tf.vectorized_map(lambda ct: self._declared(xs, ct), cts), autograph=False)
        self._vjp_row = tf.function(lambda xs, cts: self._declared(xs, cts), autograph=False)

    def _declared(self, tensors, cotangents):
        try:
            grads = self.reference(*tensors, *cotangents)
        except TypeError as error:
            raise CheckSetupError(
                f"calling reference({self.describe}) failed: {error}. The reference is a VJP: "
                "it takes the inputs, then one upstream gradient per floating output, and "
                "returns one gradient per input.") from None
        return self.slots.dense(self._per_input(grads), [tensors[i] for i in self.wrt])

    def _per_input(self, grads):
        if not isinstance(grads, (list, tuple)):
            grads = [grads]
        grads = list(grads)
        for n, grad in enumerate(grads):
            if not (grad is None or _tf.tf().is_tensor(grad) or isinstance(grad, (np.ndarray, float, int))):
                raise CheckSetupError(
                    f"the reference returned a {type(grad).__name__} as gradient {n}; it must "
                    "return one tensor (or None) per input, as a list or tuple in the inputs' order.")
        if len(grads) == self.n_inputs:
            return [grads[i] for i in self.wrt]
        if len(grads) == len(self.wrt):
            return grads
        raise CheckSetupError(
            f"the reference returned {len(grads)} gradient(s); it must return one per input "
            f"({self.n_inputs}, None for integer inputs) or one per floating input ({len(self.wrt)}).")

    def vjp(self, cotangents):
        try:
            return super().vjp(cotangents)
        except CheckSetupError:
            raise
        except Exception as error:  # noqa: BLE001  (a broken reference is the user's to fix)
            raise CheckSetupError(f"the reference gradient raised: {error}") from None


def describe_source(fn, target, values, override_map):
    """(kind of gradient source, names of the registered gradients the function uses).

    The names are what the coverage gate matches: op types (or the names an
    override map swaps in) and Defun names, read from a trace of the function.
    """
    if override_map:
        kind = "override map"
    elif _tf.is_defun(fn):
        kind = "Defun"
    else:
        kind = "built-in"
    names = set()
    for op in _traced_ops(target, values):
        names.add(_gradient_name(op))
        if kind == "built-in" and _gradient_name(op).startswith("CustomGradient"):
            kind = "custom_gradient"
        elif kind == "built-in" and _registered_outside_tensorflow(_gradient_name(op)):
            kind = "registered gradient"
    if _tf.is_defun(fn):
        names.add(fn.name)
    return kind, sorted(names)


def unused_overrides(target, values, override_map):
    """The op types in `override_map` that a trace of the function never creates
    (nested function bodies included): a map that can change nothing."""
    if not override_map:
        return ()
    graph = _traced_graph(target, values)
    if graph is None:
        return ()
    definition = graph.as_graph_def()
    created = {node.op for node in definition.node}
    created.update(node.op for function in definition.library.function
                   for node in function.node_def)
    return tuple(sorted(set(override_map) - created))


def _traced_ops(target, values):
    graph = _traced_graph(target, values)
    return [] if graph is None else graph.get_operations()


def _traced_graph(target, values):
    from gradcheck.execution.probes import traced

    tf = _tf.tf()
    specs = [tf.TensorSpec(np.shape(v), tf.as_dtype(np.asarray(v).dtype)) for v in values]
    try:
        return traced(target).get_concrete_function(*specs).graph
    except Exception:  # noqa: BLE001  (a function that cannot be traced uses no graph ops)
        return None


def _gradient_name(op):
    try:
        return op.get_attr("_gradient_op_type").decode()
    except ValueError:
        return op.type


def _registered_outside_tensorflow(name):
    try:
        function = _tf.gradient_registry().lookup(name)
    except LookupError:
        return False
    module = getattr(function, "__module__", "") or ""
    return function is not None and not module.startswith(("tensorflow", "keras", "tf_keras"))
