"""Execution modes: how the forward pass and its gradients are run.

Every mode offers the same two things to the checker, built by `runner()`:

- `forward()`: the function's flat outputs as numpy arrays;
- `vjp(cotangents)`: for a batch of cotangents (one array per differentiable
  output, with a leading batch axis), the gradients with respect to the
  differentiable inputs, one array per input with the same batch axis.

The batch of VJPs is vectorised with `tf.vectorized_map` so a whole Jacobian
takes a few calls rather than one Python call per row. `vjp_inline()` computes
one VJP the way the mode does; second-order checks differentiate through it.
"""
import numpy as np

from gradcheck import _tf

MODE_NAMES = ("eager", "function", "graph", "xla")


def resolve_modes(modes):
    if modes is None:
        return list(MODE_NAMES)
    if isinstance(modes, str):
        modes = [modes]
    modes = list(modes)
    unknown = [m for m in modes if m not in MODE_NAMES]
    if unknown or not modes:
        raise ValueError(
            f"unknown mode(s) {unknown or modes}; choose from {', '.join(MODE_NAMES)}."
        )
    return list(dict.fromkeys(modes))


def uses_tape(mode):
    return mode != "graph"


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


def gradient_sources(target, tensors, wrt):
    """What to differentiate with respect to: the input tensors, or for inputs
    that stand for a captured tf.Variable, the variable itself."""
    variables = getattr(target, "variable_slots", {})
    return [variables.get(i, tensors[i]) for i in wrt]


def _cast_like(cotangents, outputs):
    tf = _tf.tf()
    return [tf.cast(c, y.dtype) for c, y in zip(cotangents, outputs)]


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


def runner(mode, target, inputs, wrt, out_index, device, batch_size):
    """Build the runner of `target` in `mode` on `device`.

    `target(list of tensors) -> list of tensors`; `wrt` are the positions of the
    differentiable inputs, `out_index` those of the differentiable outputs.
    """
    cls = {"eager": EagerRunner, "function": FunctionRunner, "xla": FunctionRunner,
           "graph": GraphRunner}[mode]
    return cls(mode, target, inputs, wrt, out_index, device, batch_size)


class TracedGradientDiffers(Exception):
    """Eager mode's batched (traced) VJPs differ from its truly eager ones."""


class Runner:
    """VJPs for a batch of cotangents: vectorised when `tf.vectorized_map` can
    convert the gradient, else one row at a time (Defun calls, some custom ops)."""

    row_by_row = False
    vectorization_failed = False
    traced_differs = False

    def vjp(self, cotangents):
        if not self.row_by_row:
            try:
                return self._vectorized_vjp(cotangents)
            except Exception:  # noqa: BLE001  (retried row by row, which raises the real error)
                self.row_by_row = self.vectorization_failed = True
                self.discard_failed_gradient()
        rows = [self._row_vjp([c[b] for c in cotangents]) for b in range(len(cotangents[0]))]
        return [np.stack(column) for column in zip(*rows)]

    def jvp(self, fixed_cotangents, tangents):
        """Jacobian columns J v of the gradient in use, for a batch of tangents v
        (one array per differentiable input, leading batch axis): the VJP is
        differentiated with respect to its cotangent, at `fixed_cotangents`
        (one array per differentiable output). Exact when the VJP is linear in
        its cotangent, as a gradient must be; analytic.py verifies that."""
        raise NotImplementedError(f"{type(self).__name__} computes Jacobian rows only")

    def start(self):
        """Run the forward pass once, so that a mode it cannot run in is known
        before any gradient; raises what the forward pass raises."""
        self.forward()

    def forward_error(self):
        """After a failed VJP: what the forward pass alone raises, or None."""
        try:
            self.forward()
        except Exception as error:  # noqa: BLE001  (the caller reports it)
            return error
        return None

    @property
    def none_inputs(self):
        return self.slots.none_inputs

    def discard_failed_gradient(self):
        """Forget what a failed gradient attempt (batched, or grouped rows) left behind."""

    def close(self):
        pass


class EagerRunner(Runner):
    """Forward pass run eagerly under a persistent tape. The tape is then
    differentiated eagerly, one row at a time, for Jacobians of up to
    EAGER_ROW_LIMIT rows (no tracing at all); larger ones are vectorised in a
    tf.function, and each batch is verified against one truly eager VJP."""

    EAGER_ROW_LIMIT = 256

    def __init__(self, mode, target, inputs, wrt, out_index, device, batch_size):
        tf = _tf.tf()
        self.device = device
        with tf.device(device):
            self.tensors = [tf.constant(value) for value in inputs]
            self.tape = tf.GradientTape(persistent=True)
            with self.tape:
                for i in wrt:
                    self.tape.watch(self.tensors[i])
                self.outputs = target(self.tensors)
        self.selected = [self.outputs[k] for k in out_index]
        self.sources = gradient_sources(target, self.tensors, wrt)
        self.slots = GradientSlots()
        rows = sum(int(np.prod(y.shape)) * (2 if y.dtype.is_complex else 1) for y in self.selected)
        self.row_by_row = rows <= self.EAGER_ROW_LIMIT
        self._batched = self._columns = None

    def forward(self):
        return [_tf.to_numpy(y) for y in self.outputs]

    def _gradient(self, row_cotangents):
        grads = self.tape.gradient(self.selected, self.sources, output_gradients=list(row_cotangents))
        return self.slots.dense(grads, self.sources)

    def _vectorized_vjp(self, cotangents):
        grads = self._traced_vjp(cotangents)
        if not self._eager_agrees(cotangents, grads):
            # Gradient code that branches on tf.executing_eagerly() took its
            # traced path: eager mode must be checked eagerly, row by row.
            self.traced_differs = True
            raise TracedGradientDiffers()
        return grads

    def _eager_agrees(self, cotangents, grads):
        """One truly eager VJP, for a random mix of the batch's cotangents, equals
        the same mix of the traced VJPs (a gradient is linear in its cotangent)."""
        weights = np.random.default_rng(len(cotangents[0])).uniform(0.5, 1.5, len(cotangents[0]))
        mixed = [np.tensordot(weights, c, axes=1).astype(c.dtype) for c in cotangents]
        eager = self._row_vjp(mixed)
        for e, g in zip(eager, grads):
            wide = np.asarray(g, dtype=np.complex128 if np.iscomplexobj(g) else np.float64)
            expected = np.tensordot(weights, wide, axes=1)
            scale = np.abs(weights).sum() * max(float(np.max(np.abs(g), initial=0.0)), 1e-30)
            tolerance = 1e3 * float(np.finfo(g.real.dtype).eps) * scale
            with np.errstate(invalid="ignore"):
                if not np.all(np.abs(e - expected) <= tolerance):
                    return False
        return True

    def _traced_vjp(self, cotangents):
        tf = _tf.tf()
        if self._batched is None:
            # tf.vectorized_map traces its loop body on every call; one function
            # for the runner traces it once for all batches (they share a shape).
            self._batched = tf.function(
                lambda batch: _tf.vectorized_map(self._gradient, batch),
                autograph=False)
        with tf.device(self.device):
            result = self._batched([tf.constant(c) for c in cotangents])
        return [_tf.to_numpy(g) for g in result]

    def _row_vjp(self, row_cotangents):
        tf = _tf.tf()
        with tf.device(self.device):
            grads = self._gradient([tf.constant(c) for c in row_cotangents])
        return [_tf.to_numpy(g) for g in grads]

    def jvp(self, fixed_cotangents, tangents):
        tf = _tf.tf()
        if self._columns is None:
            self._columns = tf.function(
                lambda fixed, batch: columns_from_vjp(self._gradient, fixed, batch), autograph=False)
        with tf.device(self.device):
            result = self._columns([tf.constant(c) for c in fixed_cotangents],
                                   [tf.constant(t) for t in tangents])
        return [_tf.to_numpy(c) for c in result]


class TracedRunner(Runner):
    """A runner whose VJPs are two tf.functions of (inputs, cotangents):
    `self._vjp` for a batch, `self._vjp_row` for one row."""

    def _call(self, function, cotangents):
        tf = _tf.tf()
        with tf.device(self.device):
            batch = [tf.constant(c) for c in cotangents]
            return [_tf.to_numpy(g) for g in function(self.tensors, batch)]

    def _vectorized_vjp(self, cotangents):
        return self._call(self._vjp, cotangents)

    def _row_vjp(self, row_cotangents):
        return self._call(self._vjp_row, row_cotangents)


class FunctionRunner(TracedRunner):
    """tf.function (with jit_compile for the xla mode): forward and batched VJPs,
    traced once per input signature and reused across checks of the function."""

    def __init__(self, mode, target, inputs, wrt, out_index, device, batch_size):
        tf = _tf.tf()
        self.mode, self.device = mode, device
        with tf.device(device):
            self.tensors = [tf.constant(value) for value in inputs]
        key = ("function runner", mode, device, tuple(wrt), tuple(out_index))
        self._forward = traced_forward(target, mode, device)
        self.slots, self._vjp, self._vjp_row, self._columns = compiled(
            target, key, lambda: _function_runner_parts(mode, target, wrt, out_index, device))

    def jvp(self, fixed_cotangents, tangents):
        tf = _tf.tf()
        with tf.device(self.device):
            result = self._columns(self.tensors, [tf.constant(c) for c in fixed_cotangents],
                                   [tf.constant(t) for t in tangents])
        return [_tf.to_numpy(c) for c in result]

    def forward(self):
        tf = _tf.tf()
        with tf.device(self.device):
            return [_tf.to_numpy(y) for y in self._forward(*self.tensors)]

    def start(self):
        # Every VJP runs the forward pass too (and XLA compiles it again), so
        # running it alone first would only add to the cost: it runs alone only
        # when a VJP fails, to tell a forward pass that cannot run from a gradient.
        pass


def _function_runner_parts(mode, target, wrt, out_index, device):
    tf = _tf.tf()
    jit = mode == "xla"
    slots = GradientSlots()

    # The device scope is entered inside the traced bodies too (see traced_forward).
    def gradient_of_rows(tensors, cotangents, vectorized):
        tensors = list(tensors)
        with tf.device(device):
            with tf.GradientTape(persistent=True) as tape:
                for i in wrt:
                    tape.watch(tensors[i])
                outputs = target(tensors)
            selected = [outputs[k] for k in out_index]
            sources = gradient_sources(target, tensors, wrt)

            def one_row(row_cotangents):
                grads = tape.gradient(selected, sources, output_gradients=list(row_cotangents))
                return slots.dense(grads, sources)

            if vectorized is None:  # cotangents = (fixed cotangents, tangents): columns
                return columns_from_vjp(one_row, *cotangents)
            if not vectorized:
                return one_row(cotangents)
            return _tf.vectorized_map(one_row, list(cotangents))

    return (slots,
            tf.function(lambda xs, cts: gradient_of_rows(xs, cts, True), jit_compile=jit,
                        autograph=False),
            tf.function(lambda xs, cts: gradient_of_rows(xs, cts, False), jit_compile=jit,
                        autograph=False),
            tf.function(lambda xs, fixed, tangents: gradient_of_rows(xs, (fixed, tangents), None),
                        jit_compile=jit, autograph=False))


class GraphRunner(Runner):
    """A tf.compat.v1 Graph: placeholders and the forward pass at once; on the
    first VJP, tf.gradients for a placeholder batch of cotangents. Run in a Session."""

    def __init__(self, mode, target, inputs, wrt, out_index, device, batch_size):
        self.inputs = inputs
        self.target, self.wrt, self.out_index, self.device = target, wrt, out_index, device
        self.batch_size = batch_size
        self.slots = GradientSlots()
        self.integer_inputs_with_gradient = []
        self._new_graph()

    def _new_graph(self):
        tf = _tf.tf()
        self.graph = tf.Graph()
        with self.graph.as_default(), self.graph.device(self.device):
            self.placeholders = [
                tf.compat.v1.placeholder(tf.as_dtype(v.dtype), shape=v.shape) for v in self.inputs
            ]
            with _tf.outputting_all_intermediates():
                self.outputs = self.target(self.placeholders)
        self.session = tf.compat.v1.Session(graph=self.graph)
        self.selected = [self.outputs[k] for k in self.out_index]
        self.sources = [self.placeholders[i] for i in self.wrt]
        self._built = {}

    def discard_failed_gradient(self):
        # A failed gradient build can leave the graph invalid as a whole (a
        # while loop's gradient rewired): what follows gets a graph of its own.
        self.session.close()
        self._new_graph()

    def _gradients(self, row_cotangents):
        tf = _tf.tf()
        grads = tf.gradients(self.selected, self.sources, grad_ys=list(row_cotangents))
        return self.slots.dense(grads, self.sources)

    def _build(self, vectorized):
        """Cotangent placeholders and the gradient ops, batched or for one row."""
        tf = _tf.tf()
        if vectorized not in self._built:
            with self.graph.as_default(), self.graph.device(self.device):
                self.integer_inputs_with_gradient = self._integer_gradients()
                lead = [self.batch_size] if vectorized else []
                # Shapes from the forward run: a Defun call's static shape is unknown.
                placeholders = [tf.compat.v1.placeholder(y.dtype, shape=lead + list(shape))
                                for y, shape in zip(self.selected, self.selected_shapes)]
                if vectorized:
                    grads = _tf.vectorized_map(self._gradients, placeholders)
                else:
                    grads = self._gradients(placeholders)
            self._built[vectorized] = (placeholders, grads)
        return self._built[vectorized]

    def _integer_gradients(self):
        """Positions of non-differentiable inputs that tf.gradients gives a gradient."""
        tf = _tf.tf()
        others = [i for i in range(len(self.placeholders)) if i not in self.wrt]
        if not others:
            return []
        grads = tf.gradients(self.selected, [self.placeholders[i] for i in others])
        return [i for i, g in zip(others, grads) if g is not None]

    def _feed(self):
        return dict(zip(self.placeholders, self.inputs))

    def start(self):
        # As FunctionRunner.start, the VJPs run the forward pass too, and each new
        # set of fetches costs a graph optimisation of its own (0.1 s for a graph
        # holding an 8 MB constant): the forward pass runs alone only for output
        # shapes the graph does not know (a Defun call's).
        if all(y.shape.is_fully_defined() for y in self.selected):
            self.selected_shapes = [tuple(y.shape.as_list()) for y in self.selected]
        else:
            self.forward()

    def forward(self):
        values = [np.asarray(v) for v in self.session.run(self.outputs, self._feed())]
        self.selected_shapes = [values[k].shape for k in self.out_index]
        return values

    def _run(self, vectorized, cotangents):
        placeholders, grads = self._build(vectorized)
        feed = self._feed()
        feed.update(zip(placeholders, cotangents))
        return [np.asarray(v) for v in self.session.run(grads, feed)]

    def _vectorized_vjp(self, cotangents):
        return self._run(True, cotangents)

    def jvp(self, fixed_cotangents, tangents):
        tf = _tf.tf()
        if "columns" not in self._built:
            with self.graph.as_default(), self.graph.device(self.device):
                fixed = [tf.compat.v1.placeholder(y.dtype, shape=shape)
                         for y, shape in zip(self.selected, self.selected_shapes)]
                batch = [tf.compat.v1.placeholder(x.dtype, shape=(None,) + tuple(x.shape))
                         for x in self.sources]
                grads = self._gradients(fixed)

                def one_column(v):
                    columns = tf.gradients(grads, fixed, grad_ys=list(v),
                                           unconnected_gradients=tf.UnconnectedGradients.ZERO)
                    return list(columns)

                columns = _tf.vectorized_map(one_column, batch)
            self._built["columns"] = (fixed, batch, columns)
        fixed, batch, columns = self._built["columns"]
        feed = self._feed()
        feed.update(zip(fixed, fixed_cotangents))
        feed.update(zip(batch, tangents))
        return [np.asarray(v) for v in self.session.run(columns, feed)]

    def _row_vjp(self, row_cotangents):
        return self._run(False, row_cotangents)

    def close(self):
        self.session.close()
