"""Steps, Richardson extrapolation and kinks: central differences at h and h/2
combine into a value with error O(h^4), and the one-sided differences tell a
kink (where finite differences mean nothing) from curvature."""
import numpy as np

from gradcheck.numerics.dtypes import finfo

# Richardson on central differences balances truncation (h^4) against
# rounding (eps / h) at h ~ eps^(1/5).
_SMALL_SCALE_FLOOR = 2.0 ** -10
OFFSETS = np.array([1.0, -1.0, 0.5, -0.5])


def base_step(dtype):
    return float(finfo(dtype).eps) ** 0.2


def step_scales(x_real, dtype, eps=None):
    """Candidate steps per real component, shape (scales, n)."""
    magnitude = np.abs(x_real.astype(np.float64))
    if eps is not None:
        return (eps * np.maximum(magnitude, 1.0))[None]
    base = base_step(dtype)
    return np.stack([
        base * np.maximum(magnitude, 1.0),
        base * np.maximum(magnitude, _SMALL_SCALE_FLOOR),
    ])


def rounding_floor(value, f0, t, precision):
    """(cols, out): how far rounding each output to `precision` (half a unit in
    the last place, at most eps/2 * |output|) can move a Richardson value from
    the steps t and t/2: 3 rounding errors / t."""
    magnitude = np.abs(f0)[None, :] + np.abs(value) * t[:, None]
    return 1.5 * float(finfo(precision).eps) * magnitude / t[:, None]


def extrapolated(at_offsets, t):
    """(Richardson's value, the spread between its two central differences)
    from values at the steps t = h * OFFSETS (t may carry axes to broadcast)."""
    d_full = (at_offsets[0] - at_offsets[1]) / (t[0] - t[1])
    d_half = (at_offsets[2] - at_offsets[3]) / (t[2] - t[3])
    spread = d_half - d_full
    return d_half + spread / 3.0, spread


def kinks_at(y, taken, f0, dtype):
    """(cols, out): where forward and backward differences disagree by a jump
    that does not shrink with the step, as it would if it were curvature.
    (In place where it can: the arrays are as large as the Jacobian.)"""
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        def one_sided(plus, minus):
            forward = y[plus] - f0
            forward /= taken[plus][:, None]
            backward = f0 - y[minus]
            backward /= -taken[minus][:, None]
            return forward, backward

        forward, backward = one_sided(2, 3)
        jump_half = np.abs(forward - backward)
        slope = np.maximum(np.abs(forward, out=forward), np.abs(backward, out=backward), out=forward)
        noise = np.maximum(slope, 1.0, out=slope)
        noise *= np.sqrt(float(finfo(dtype).eps))
        kink = jump_half > noise
        forward, backward = one_sided(0, 1)
        forward -= backward
        jump_half *= 1.5
        kink &= np.abs(forward, out=forward) < jump_half
        return kink


def one_sided_bounds(y, taken, f0, kink):
    """(2, entries): at the entries where `kink` (cols, out) is True, the least
    and the greatest of the one-sided differences F(h/2), B(h/2) and their
    extrapolations to step 0, 2 F(h/2) - F(h) and 2 B(h/2) - B(h). A gradient
    at a kink must lie between them: TensorFlow's is one side or in between
    (relu and abs at 0 give 0). A step off the domain (NaN) does not widen them.
    Where a one-sided difference grows as the step shrinks, the value itself
    jumps (sign, floor): the derivative there is taken as 0, which TensorFlow
    gives, so 0 is included."""
    cols, outs = np.nonzero(kink)
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        def one_sided(plus, minus):
            forward = (y[plus][cols, outs] - f0[outs]) / taken[plus][cols]
            backward = (f0[outs] - y[minus][cols, outs]) / -taken[minus][cols]
            return forward, backward

        forward, backward = one_sided(2, 3)
        forward_full, backward_full = one_sided(0, 1)
        jumps = ((np.abs(forward) > 1.5 * np.abs(forward_full))
                 | (np.abs(backward) > 1.5 * np.abs(backward_full)))
        candidates = np.stack([forward, backward, 2.0 * forward - forward_full,
                               2.0 * backward - backward_full, np.where(jumps, 0.0, np.nan)])
    return np.stack([np.fmin.reduce(candidates, axis=0), np.fmax.reduce(candidates, axis=0)])
