"""Where a mode's ops actually ran, read back from TensorFlow once per device
and mode: a check asked for GPU:0 whose ops ran on the CPU (soft placement,
or a tf.device scope inside the function) would test the CPU's kernels.

Only ops that compute on floats count (docs/devices.md): an op counts when
one of its outputs is floating-point or complex and it is not one of the
ops that only move, hold or route data (MOVES_DATA). Shape arithmetic,
int32 ops that TensorFlow pins to host memory, _Arg/_Retval and _Send/_Recv
are thereby left out.

How each mode is read:
- function (and eager mode's batched VJPs): the partitioned graphs TensorFlow
  builds when it first runs a tf.function on a device, collected with the
  eager context's graph collection during that call. They are kept per
  concrete function and device, since a later call instantiates nothing.
- graph: the Session's partition graphs (RunOptions.output_partition_graphs),
  on the first run of each set of fetches.
- eager: an op callback during the forward pass and the first eager VJP row;
  each op's outputs carry the device it ran on.
- xla: the device of the compiled call (XLA compiles the whole function for
  the device it is called on; its ops are not placed one by one).
"""
import contextlib
import dataclasses
import functools
import threading
import weakref

from gradcheck import _tf
from gradcheck.execution.devices import short_name

# Ops that only move, hold or route data, wherever they run: arguments and
# return values, sends and receives between devices, constants, identities,
# control flow, and reading a variable (which runs where the variable lives).
MOVES_DATA = frozenset({
    "_Arg", "_Retval", "_DeviceArg", "_DeviceRetval", "_Send", "_Recv", "_HostSend",
    "_HostRecv", "Const", "HostConst", "Identity", "IdentityN", "Snapshot", "NoOp",
    "Placeholder", "PlaceholderWithDefault", "StopGradient", "PreventGradient",
    "Switch", "RefSwitch", "Merge", "RefMerge", "Enter", "RefEnter", "Exit", "RefExit",
    "NextIteration", "RefNextIteration", "LoopCond", "ControlTrigger",
    "ReadVariableOp", "_ReadVariablesOp",
})

MAX_NAMED = 6  # ops named in a skip reason; the rest are counted

# {concrete function: {(device, soft placement): ops}}: a function is placed
# when TensorFlow first runs it on a device, so later runners reuse that reading.
_instantiated = weakref.WeakKeyDictionary()
# The graph collection is the eager context's, for every thread: one reading at a time.
_collecting = threading.Lock()


@dataclasses.dataclass(frozen=True)
class PlacedOp:
    device: str  # '/device:CPU:0'
    label: str  # 'Mul (gradients/Exp_grad/mul)'


class Placement:
    """The ops that compute on floats in one runner, by the device they ran on."""

    def __init__(self, device, mode):
        self.device, self.mode = _canonical(device), mode
        self.ops = []
        self.compiled_calls = []  # xla: the devices of the compiled calls
        self._read = set()  # what was read already: tf.functions, graph runs, eager VJPs

    # --- reading -------------------------------------------------------------

    def call(self, function, *args):
        """`function(*args)` for a tf.function, its placement read on its first call here."""
        if not self.read_once(function):
            return function(*args)
        if self.mode == "xla":
            result = function(*args)
            self.compiled_calls += [_canonical(t.device) for t in _tf.tf().nest.flatten(result)
                                    if getattr(t, "device", None)]
            return result
        concrete = function.get_concrete_function(*args)
        key = (self.device, _tf.tf().config.get_soft_device_placement())
        known = _instantiated.get(concrete, {}).get(key)
        if known is not None:
            result = function(*args)
        else:
            with _collected_graphs() as graphs:
                result = function(*args)
            known = _ops_of_function_graphs(graphs())
            if known is not None:
                _instantiated.setdefault(concrete, {})[key] = known
        self.ops += known or ()
        return result

    def read_once(self, key):
        """True the first time `key` is asked about in this runner."""
        if key in self._read:
            return False
        self._read.add(key)
        return True

    def add_graphs(self, graph_defs):
        self.ops += _placed_ops(graph_defs)

    @contextlib.contextmanager
    def eager_ops(self):
        """Record where the eager ops run in the block (this thread's only)."""
        def record(op_type, inputs, attrs, outputs, op_name=None, graph=None):
            op_type = op_type.decode() if isinstance(op_type, bytes) else op_type
            if graph is not None or op_type in MOVES_DATA:
                return  # an op added to a graph being traced, not one that ran
            for t in outputs or ():
                if getattr(t, "device", None) and _tf.is_differentiable_dtype(t.dtype):
                    self.ops.append(PlacedOp(_canonical(t.device), op_type))
                    return

        with _tf.op_callback(record):
            yield

    # --- what was read -------------------------------------------------------

    def elsewhere(self):
        """{device: [labels]} of the ops that ran on another device than asked for."""
        result = {}
        for op in self.ops:
            if op.device != self.device:
                result.setdefault(op.device, []).append(op.label)
        for device in self.compiled_calls:
            if device != self.device:
                result.setdefault(device, []).append("the XLA-compiled function")
        return result

    def summary(self):
        """'13 ops' or 'one compiled call' (xla) that ran where asked, or '' if nothing was read."""
        if self.compiled_calls:
            return "one compiled call"
        n = len(self.ops)
        return f"{n} op{'s' if n > 1 else ''}" if n else ""

    def fallback_reason(self):
        """The skip reason when ops ran elsewhere, or ''."""
        elsewhere = self.elsewhere()
        if not elsewhere:
            return ""
        where = short_name(self.device)
        moved = sum(len(labels) for labels in elsewhere.values())
        total = len(self.ops) + len(self.compiled_calls)
        parts = "; ".join(f"on {short_name(d)}: {_named(labels)}" for d, labels in elsewhere.items())
        share = f"all {total} of its ops" if moved == total else f"{moved} of its {total} ops"
        return (f"asked for {where}, but {share} that compute on floats ran "
                f"elsewhere ({parts}), so this mode would test their kernels there, not "
                f"{where}'s. An op runs elsewhere when a tf.device scope inside the function "
                f"pins it there, or when it has no {where} kernel and soft placement moves it.")


@contextlib.contextmanager
def _collected_graphs():
    """Collect the graphs of the tf.functions TensorFlow instantiates in the
    block; yields a callable that returns them (a RunMetadata) after it."""
    context = _tf.eager_context()
    collected = []
    with _collecting:
        context.enable_graph_collection()
        try:
            context.export_run_metadata()  # anything collected before is not this call's
            yield lambda: collected[0]
        finally:
            collected.append(context.export_run_metadata())
            context.disable_graph_collection()


def _ops_of_function_graphs(metadata):
    """The counted ops of the partitioned graphs, or None if TensorFlow
    instantiated nothing (the function had run on this device before)."""
    graphs = [g for f in metadata.function_graphs for g in f.partition_graphs]
    return _placed_ops(graphs) if graphs else None


def _placed_ops(graph_defs):
    """The counted ops of some GraphDefs, each with the device it ran on."""
    return tuple(PlacedOp(_canonical(n.device), _label(n.op, n.name, n.attr))
                 for g in graph_defs for n in g.node if _computes_on_floats(n))


def _computes_on_floats(node):
    return node.op not in MOVES_DATA and any(_is_float(t) for t in _output_types(node))


def _output_types(node):
    op_def = _op_def(node.op)
    if op_def is None:  # a function called by name: its types are only in its attrs
        return [v.type for v in node.attr.values()] + [
            t for v in node.attr.values() for t in v.list.type]
    types = []
    for arg in op_def.output_arg:
        if arg.type:
            types.append(arg.type)
        elif arg.type_attr:
            types.append(_attr(node, op_def, arg.type_attr).type)
        elif arg.type_list_attr:
            types += list(_attr(node, op_def, arg.type_list_attr).list.type)
    return types


def _attr(node, op_def, name):
    if name in node.attr:
        return node.attr[name]
    return next((a.default_value for a in op_def.attr if a.name == name), node.attr[name])


@functools.lru_cache(maxsize=None)
def _op_def(op_type):
    return _tf.op_def(op_type)


@functools.lru_cache(maxsize=None)
def _is_float(type_enum):
    if not type_enum:
        return False
    try:
        dtype = _tf.tf().as_dtype(type_enum).base_dtype
    except TypeError:
        return False
    return dtype.is_floating or dtype.is_complex


def _label(op_type, name, attrs):
    """'Mul (gradients/Exp_grad/mul)'; a Grappler fusion names the ops it fused."""
    if op_type == "_UnaryOpsComposition" and "op_names" in attrs:
        fused = "+".join(n.decode() for n in attrs["op_names"].list.s)
        return f"{fused} (fused by Grappler as {name})"
    return f"{op_type} ({name})" if name and name != op_type else op_type


def _named(labels):
    counts = {}
    for label in labels:
        counts[label] = counts.get(label, 0) + 1
    named = [f"{label} x{n}" if n > 1 else label for label, n in counts.items()]
    if len(named) > MAX_NAMED:
        named = named[:MAX_NAMED] + [f"and {len(named) - MAX_NAMED} more"]
    return ", ".join(named)


@functools.lru_cache(maxsize=256)
def _canonical(device):
    """'/device:CPU:1' for '/job:localhost/replica:0/task:0/device:CPU:1'."""
    spec = _tf.tf().DeviceSpec.from_string(device)
    return f"/device:{spec.device_type}:{spec.device_index or 0}" if spec.device_type else device
