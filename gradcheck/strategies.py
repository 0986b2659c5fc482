"""Hypothesis strategies for gradient checks; they live in `gradcheck.testing.strategies`."""
from gradcheck.testing.strategies import (
    COMPLEX,
    FLOATING,
    Domain,
    broadcastable_shapes,
    dtypes,
    interval,
    nonzero,
    positive,
    shapes,
    tensors,
    unit_norm,
    well_conditioned,
)

__all__ = ["COMPLEX", "FLOATING", "Domain", "broadcastable_shapes", "dtypes", "interval", "nonzero",
           "positive", "shapes", "tensors", "unit_norm", "well_conditioned"]
