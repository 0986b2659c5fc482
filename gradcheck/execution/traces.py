"""tf.function traces of a target, cached on it so that later checks of the
same function reuse them."""
from gradcheck import _tf


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
                return target(list(tensors))

        return tf.function(forward, jit_compile=mode == "xla", autograph=False)

    return compiled(target, ("forward", mode == "xla", device), build)
