"""tf.function traces of a target, cached on it so that later checks of the
same function reuse them."""
import re

from gradcheck import _tf

_CONTROL_FLOW = re.compile(r"^(Stateless)?(While|If|Case)$|^TensorList|^TensorArray")


def compiled(target, key, build):
    """`build()`, cached on the target so that checks of the same function with
    inputs of the same signature reuse their traces (Hypothesis runs hundreds)."""
    cache = getattr(target, "compiled", None)
    if cache is None:
        return build()
    if key not in cache:
        cache[key] = build()
    return cache[key]


def traced_forward(target, mode, device):
    """The target as a tf.function (jit-compiled for "xla") placed on `device`,
    cached on the target. The device scope is entered inside the traced body,
    so that every op in the graph carries the placement, not only the call."""
    tf = _tf.tf()

    def build():
        def forward(*tensors):
            with tf.device(device):
                outputs = target(list(tensors))
            _note_control_flow(target)
            return outputs

        return tf.function(forward, jit_compile=mode == "xla", autograph=False)

    return compiled(target, ("forward", mode == "xla", device), build)


def has_control_flow(target):
    """Whether a trace of the target held while loops, conds or tensor lists
    (known once traced_forward has traced it)."""
    return marks(target).get("control flow", False)


def _note_control_flow(target):
    ops = _tf.tf().compat.v1.get_default_graph().get_operations()
    if any(_CONTROL_FLOW.match(op.type) for op in ops):
        marks(target)["control flow"] = True


def marks(target):
    """What checks learnt about the target, cached on it like its traces (a
    target without a cache forgets)."""
    return compiled(target, ("marks",), dict)
