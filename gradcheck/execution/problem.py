"""One order's check, fixed before any mode runs: the inputs, which of them are
differentiated, the outputs and their rows, and the tolerance rule."""
import dataclasses

from gradcheck.numerics import layout


@dataclasses.dataclass(frozen=True)
class Problem:
    order: int
    inputs: tuple  # CheckInputs: the arguments, then the variables the function reads
    wrt: tuple  # positions of the differentiated inputs
    specs: tuple  # OutputSpecs of every output
    out_index: tuple  # positions of the differentiable outputs
    tolerances: object  # compare.Tolerances
    batch: int  # cotangents per batch of VJPs

    @property
    def diff_specs(self):
        return tuple(self.specs[k] for k in self.out_index)

    @property
    def values(self):
        """The inputs as the function is called with them."""
        return [x.value for x in self.inputs]

    @property
    def wrt_inputs(self):
        return [self.inputs[i] for i in self.wrt]

    @property
    def n_rows(self):
        """Real components of all differentiable outputs: the Jacobian's rows."""
        return sum(s.real_size for s in self.diff_specs)

    @property
    def n_columns(self):
        return sum(self.inputs[i].real_size for i in self.wrt)

    def output_rows(self):
        """(k, rows): each differentiable output's slice of the Jacobian's rows."""
        return layout.output_rows(self.diff_specs)

    def pair_tolerance(self, k, i):
        """(atol, rtol) for d(output k) / d(input i)."""
        return self.tolerances.of_pair(self.inputs[i].dtype, self.diff_specs[k].dtype)

    def input_tolerance(self, x):
        """(atol, rtol) for a gradient of input `x`'s dtype."""
        return self.tolerances.of_dtype(x.dtype)

    def with_batch(self, batch):
        return dataclasses.replace(self, batch=batch)


@dataclasses.dataclass(frozen=True)
class ReferencePoint:
    """Where the finite differences are taken: the inputs in reference
    precision, the differentiable outputs there, and `evaluate(i, batch)`."""

    inputs: list
    outputs: list
    precision: str  # in words, for the report
    evaluate: object
