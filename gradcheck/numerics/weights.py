"""Random weights for cotangents and projections: random signs times
magnitudes uniform in [0.5, 1.5], never near zero, so that no entry of a
Jacobian can hide behind a tiny weight."""
import numpy as np


def signed_weights(rng, shape, dtype=np.float64):
    """Weights of `shape`, from one draw in float32 (half the time of float64
    at 10^6 elements), so exact in either dtype."""
    s = rng.random(shape, dtype=np.float32)
    s *= 2.0
    s -= 1.0
    s += np.copysign(np.float32(0.5), s)
    return s.astype(dtype, copy=False)
