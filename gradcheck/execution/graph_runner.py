"""Graph mode's runner: the function in a tf.compat.v1 Graph, its gradients
from tf.gradients, run in a Session. The graph, its gradient ops and the
session are cached on the target per input signature, as function mode's
traces are: a Hypothesis run builds them once, not once per example."""
import numpy as np

from gradcheck import _tf
from gradcheck.execution.gradients import GradientSlots
from gradcheck.execution.placement import Placement
from gradcheck.execution.runner import Runner
from gradcheck.execution.traces import compiled


class GraphRunner(Runner):
    """A tf.compat.v1 Graph: placeholders and the forward pass at once; on the
    first VJP, tf.gradients for a placeholder batch of cotangents. Run in a Session."""

    def __init__(self, mode, target, inputs, wrt, out_index, device, batch_size):
        self.inputs = inputs
        self.target, self.wrt, self.out_index, self.device = target, wrt, out_index, device
        self.batch_size = batch_size
        self.placement = Placement(device, mode)
        signature = tuple((np.asarray(v).dtype.str, np.shape(v)) for v in inputs)
        key = ("graph runner", signature, tuple(wrt), tuple(out_index), device, batch_size)
        self.built = compiled(target, key, lambda: _GraphBuild(self))
        self._kept = getattr(target, "compiled", None) is not None

    @property
    def slots(self):
        return self.built.slots

    @property
    def integer_inputs_with_gradient(self):
        return self.built.integer_inputs_with_gradient

    def discard_failed_gradient(self):
        # A failed gradient build can leave the graph invalid as a whole (a
        # while loop's gradient rewired): what follows gets a graph of its own.
        self.built.renew()

    def _gradients(self, row_cotangents):
        tf = _tf.tf()
        grads = tf.gradients(self.built.selected, self.built.sources, grad_ys=list(row_cotangents))
        return self.built.slots.dense(grads, self.built.sources)

    def _build(self, vectorized):
        """Cotangent placeholders and the gradient ops, batched or for one row."""
        tf = _tf.tf()
        if vectorized not in self.built.gradient_ops:
            with self.built.graph.as_default(), self.built.graph.device(self.device):
                self.built.integer_inputs_with_gradient = self._integer_gradients()
                lead = [self.batch_size] if vectorized else []
                # Shapes from the forward run: a Defun call's static shape is unknown.
                placeholders = [tf.compat.v1.placeholder(y.dtype, shape=lead + list(shape))
                                for y, shape in zip(self.built.selected, self.built.selected_shapes)]
                if vectorized:
                    grads = _tf.vectorized_map(self._gradients, placeholders)
                else:
                    grads = self._gradients(placeholders)
            self.built.gradient_ops[vectorized] = (placeholders, grads)
        return self.built.gradient_ops[vectorized]

    def _integer_gradients(self):
        """Positions of non-differentiable inputs that tf.gradients gives a gradient."""
        tf = _tf.tf()
        others = [i for i in range(len(self.built.placeholders)) if i not in self.wrt]
        if not others:
            return []
        # tf.gradients of a complex output needs grad_ys; any will do to see None.
        grads = tf.gradients(self.built.selected, [self.built.placeholders[i] for i in others],
                             grad_ys=[tf.ones_like(y) for y in self.built.selected])
        return [i for i, g in zip(others, grads) if g is not None]

    def _feed(self):
        return dict(zip(self.built.placeholders, self.inputs))

    def start(self):
        # The VJPs run the forward pass too, and each new set of fetches costs a graph
        # optimisation (docs/benchmarks.md): it runs alone only for output shapes the graph lacks.
        if all(y.shape.is_fully_defined() for y in self.built.selected):
            self.built.selected_shapes = [tuple(y.shape.as_list()) for y in self.built.selected]
        else:
            self.forward()

    def forward(self):
        values = [np.asarray(v) for v in self._session_run("forward", self.built.outputs, self._feed())]
        self.built.selected_shapes = [values[k].shape for k in self.out_index]
        return values

    def _run(self, vectorized, cotangents):
        placeholders, grads = self._build(vectorized)
        feed = self._feed()
        feed.update(zip(placeholders, cotangents))
        return [np.asarray(v) for v in self._session_run(vectorized, grads, feed)]

    def _vectorized_vjp(self, cotangents):
        return self._run(True, cotangents)

    def jvp(self, fixed_cotangents, tangents):
        tf = _tf.tf()
        if "columns" not in self.built.gradient_ops:
            with self.built.graph.as_default(), self.built.graph.device(self.device):
                fixed = [tf.compat.v1.placeholder(y.dtype, shape=shape)
                         for y, shape in zip(self.built.selected, self.built.selected_shapes)]
                batch = [tf.compat.v1.placeholder(x.dtype, shape=(None,) + tuple(x.shape))
                         for x in self.built.sources]
                grads = self._gradients(fixed)

                def one_column(v):
                    columns = tf.gradients(grads, fixed, grad_ys=list(v),
                                           unconnected_gradients=tf.UnconnectedGradients.ZERO)
                    return list(columns)

                columns = _tf.vectorized_map(one_column, batch)
            self.built.gradient_ops["columns"] = (fixed, batch, columns)
        fixed, batch, columns = self.built.gradient_ops["columns"]
        feed = self._feed()
        feed.update(zip(fixed, fixed_cotangents))
        feed.update(zip(batch, tangents))
        return [np.asarray(v) for v in self._session_run("columns", columns, feed)]

    def _session_run(self, key, fetches, feed):
        """`session.run`; on the first run of these fetches, with the partition
        graphs it ran (each node's device) read into the placement."""
        if not self.placement.read_once((self.built.generation, key)):
            return self.built.session.run(fetches, feed)
        tf = _tf.tf()
        metadata = tf.compat.v1.RunMetadata()
        values = self.built.session.run(fetches, feed, run_metadata=metadata,
                                  options=tf.compat.v1.RunOptions(output_partition_graphs=True))
        self.placement.add_graphs(metadata.partition_graphs)
        return values

    def _row_vjp(self, row_cotangents):
        return self._run(False, row_cotangents)

    def close(self):
        if not self._kept:
            self.built.session.close()


class _GraphBuild:
    """The graph of one target and input signature, its gradient ops as they
    are built, and its session."""

    def __init__(self, runner):
        self.target, self.device = runner.target, runner.device
        self.wrt, self.out_index = runner.wrt, runner.out_index
        # Dtypes and shapes only: the cache must not keep a first check's values alive.
        self.input_specs = [(np.asarray(v).dtype, np.shape(v)) for v in runner.inputs]
        self.generation = -1  # graphs built so far, less one: a new graph is read anew
        self.session = None
        self.selected_shapes = None  # the differentiable outputs' shapes, set by start()
        self.renew()

    def renew(self):
        tf = _tf.tf()
        if self.session is not None:
            self.session.close()
        self.slots = GradientSlots()
        self.integer_inputs_with_gradient = []
        self.graph = tf.Graph()
        with self.graph.as_default(), self.graph.device(self.device):
            self.placeholders = [
                tf.compat.v1.placeholder(tf.as_dtype(dtype), shape=shape)
                for dtype, shape in self.input_specs]
            with _tf.outputting_all_intermediates():
                self.outputs = self.target(self.placeholders)
        self.session = tf.compat.v1.Session(graph=self.graph)
        self.generation += 1
        self.selected = [self.outputs[k] for k in self.out_index]
        self.sources = [self.placeholders[i] for i in self.wrt]
        self.gradient_ops = {}  # by kind (batched, one row, columns): placeholders and ops
