"""Graph mode's runner: the function in a tf.compat.v1 Graph, its gradients
from tf.gradients, run in a Session."""
import numpy as np

from gradcheck import _tf
from gradcheck.execution.gradients import GradientSlots
from gradcheck.execution.placement import Placement
from gradcheck.execution.runner import Runner


class GraphRunner(Runner):
    """A tf.compat.v1 Graph: placeholders and the forward pass at once; on the
    first VJP, tf.gradients for a placeholder batch of cotangents. Run in a Session."""

    def __init__(self, mode, target, inputs, wrt, out_index, device, batch_size):
        self.inputs = inputs
        self.target, self.wrt, self.out_index, self.device = target, wrt, out_index, device
        self.batch_size = batch_size
        self.slots = GradientSlots()
        self.integer_inputs_with_gradient = []
        self.placement = Placement(device, mode)
        self._generation = -1  # graphs built so far, less one: a new graph is read anew
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
        self._generation += 1
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
        # tf.gradients of a complex output needs grad_ys; any will do to see None.
        grads = tf.gradients(self.selected, [self.placeholders[i] for i in others],
                             grad_ys=[tf.ones_like(y) for y in self.selected])
        return [i for i, g in zip(others, grads) if g is not None]

    def _feed(self):
        return dict(zip(self.placeholders, self.inputs))

    def start(self):
        # The VJPs run the forward pass too, and each new set of fetches costs a graph
        # optimisation (docs/benchmarks.md): it runs alone only for output shapes the graph lacks.
        if all(y.shape.is_fully_defined() for y in self.selected):
            self.selected_shapes = [tuple(y.shape.as_list()) for y in self.selected]
        else:
            self.forward()

    def forward(self):
        values = [np.asarray(v) for v in self._session_run("forward", self.outputs, self._feed())]
        self.selected_shapes = [values[k].shape for k in self.out_index]
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
        return [np.asarray(v) for v in self._session_run("columns", columns, feed)]

    def _session_run(self, key, fetches, feed):
        """`session.run`; on the first run of these fetches, with the partition
        graphs it ran (each node's device) read into the placement."""
        if not self.placement.read_once((self._generation, key)):
            return self.session.run(fetches, feed)
        tf = _tf.tf()
        metadata = tf.compat.v1.RunMetadata()
        values = self.session.run(fetches, feed, run_metadata=metadata,
                                  options=tf.compat.v1.RunOptions(output_partition_graphs=True))
        self.placement.add_graphs(metadata.partition_graphs)
        return values

    def _row_vjp(self, row_cotangents):
        return self._run(False, row_cotangents)

    def close(self):
        self.session.close()
