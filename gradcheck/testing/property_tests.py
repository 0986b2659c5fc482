"""`gradient_test`: a pytest test that Hypothesis drives through check_gradients,
and the Hypothesis settings profiles for gradient checks."""
import numpy as np
from hypothesis import HealthCheck, reject, settings
from hypothesis import given as hypothesis_given
from hypothesis import strategies as st

from gradcheck.check import check_gradients
from gradcheck.errors import GradientCheckError
from gradcheck.execution.outputs import function_name

PROFILES = {
    # Derandomised and with no deadline: the first example of a mode traces
    # TensorFlow functions, which takes far longer than the others.
    "gradcheck-ci": dict(deadline=None, derandomize=True, max_examples=50, print_blob=True,
                         suppress_health_check=[HealthCheck.too_slow]),
    "gradcheck-dev": dict(deadline=None, max_examples=20,
                          suppress_health_check=[HealthCheck.too_slow]),
}


def register_profiles():
    for name, options in PROFILES.items():
        settings.register_profile(name, **options)


def gradient_test(fn, args, *, max_kink_fraction=0.5, hypothesis_settings=None, **check_options):
    """A test function: Hypothesis draws one value per strategy in `args` (plain
    values are used as they are) and check_gradients checks `fn` on them.

    A passing example where more than `max_kink_fraction` of the input
    elements sit on kinks is rejected (it says little: a gradient there only has
    to lie between the one-sided differences); a failing one fails, kinks or
    not, since its gradient lies outside them. A failure shrinks to a minimal example and
    its message carries a check_gradients call that reproduces it.
    `hypothesis_settings` (a hypothesis.settings) applies to this test; by
    default the loaded profile's, with no deadline (first calls trace).
    """
    if not isinstance(args, (list, tuple)):
        raise TypeError(f"gradient_test's args must be a list or tuple with one strategy (or value) "
                        f"per argument of fn, got {type(args).__name__}. For one argument, pass "
                        "[strategy].")
    strategies = [a if isinstance(a, st.SearchStrategy) else st.just(a) for a in args]
    check_options.setdefault("raise_on_failure", False)

    @(hypothesis_settings or settings(deadline=None))
    @hypothesis_given(st.tuples(*strategies))
    def test(values):
        report = check_gradients(fn, list(values), **check_options)
        if not report.ok:
            raise GradientCheckError(report, reproduction(fn, values, check_options))
        if report.kink_fraction > max_kink_fraction:
            reject()

    test.__name__ = f"test_gradient_of_{function_name(fn)}"
    test.__qualname__ = test.__name__
    return test


def reproduction(fn, values, check_options):
    """A check_gradients(...) call to paste into a test."""
    options = {k: v for k, v in check_options.items() if k != "raise_on_failure"}
    arrays = ", ".join(array_literal(v) for v in values)
    extra = "".join(f", {k}={v!r}" for k, v in options.items())
    return ("Reproduce with:\n"
            f"    check_gradients({function_name(fn)}, [{arrays}]{extra})")


def array_literal(value):
    array = np.asarray(value)
    dtype = array.dtype.name
    if dtype == "bfloat16":  # numpy alone does not know it
        return f"tf.constant({array.astype(np.float32).tolist()!r}, dtype=tf.bfloat16)"
    if array.ndim == 0:
        return f"np.array({array.item()!r}, dtype={dtype!r})"
    return f"np.array({array.tolist()!r}, dtype={dtype!r})"
