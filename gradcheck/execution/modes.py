"""The execution modes: their names, which take gradients with a tape, the
runner of each, and one VJP as a mode computes it (for second-order checks)."""
from gradcheck import _tf
from gradcheck.errors import OptionError
from gradcheck.execution.eager_runner import EagerRunner
from gradcheck.execution.function_runner import FunctionRunner
from gradcheck.execution.gradients import dense_or_zeros, gradient_sources
from gradcheck.execution.graph_runner import GraphRunner

MODE_NAMES = ("eager", "function", "graph", "xla")


def resolve_modes(modes):
    if modes is None:
        return list(MODE_NAMES)
    if isinstance(modes, str):
        modes = [modes]
    if not isinstance(modes, (list, tuple, set, frozenset)):
        raise OptionError(f"modes must be a mode name or a list of them, got {modes!r}; "
                          f"choose from {', '.join(MODE_NAMES)}.")
    modes = list(modes)
    unknown = [m for m in modes if not isinstance(m, str) or m not in MODE_NAMES]
    if unknown or not modes:
        raise OptionError(
            f"unknown mode(s) {unknown or modes}; choose from {', '.join(MODE_NAMES)}."
        )
    return list(dict.fromkeys(modes))


def uses_tape(mode):
    return mode != "graph"


def runner(mode, target, inputs, wrt, out_index, device, batch_size):
    """Build the runner of `target` in `mode` on `device` (see runner.Runner).

    `target(list of tensors) -> list of tensors`; `wrt` are the positions of the
    differentiable inputs, `out_index` those of the differentiable outputs.
    """
    cls = {"eager": EagerRunner, "function": FunctionRunner, "xla": FunctionRunner,
           "graph": GraphRunner}[mode]
    return cls(mode, target, inputs, wrt, out_index, device, batch_size)


def vjp_inline(mode, target, tensors, wrt, out_index, cotangents):
    """One VJP of `target` as `mode` computes it; None gradients become zeros."""
    tf = _tf.tf()
    sources = gradient_sources(target, tensors, wrt)
    if uses_tape(mode):
        with tf.GradientTape() as tape:
            tape.watch(sources)
            outputs = target(tensors)
        selected = [outputs[k] for k in out_index]
        grads = tape.gradient(selected, sources, output_gradients=_cast_like(cotangents, selected))
    else:
        outputs = target(tensors)
        selected = [outputs[k] for k in out_index]
        grads = tf.gradients(selected, sources, grad_ys=_cast_like(cotangents, selected))
    return [dense_or_zeros(g, tensors[i]) for g, i in zip(grads, wrt)]


def _cast_like(cotangents, outputs):
    tf = _tf.tf()
    return [tf.cast(c, y.dtype) for c, y in zip(cotangents, outputs)]
