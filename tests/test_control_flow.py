"""Functions with control flow, as op authors write them: a series summed in a
tf.while_loop with a tf.custom_gradient, a tf.scan recurrence. Right gradients
pass in every mode (XLA included), wrong ones fail, whether the check batches
its rows with tf.vectorized_map or runs them one at a time."""
import numpy as np
import pytest
import tensorflow as tf

from gradcheck import check_gradients
from gradcheck.execution import batching

MODES = ("eager", "function", "graph", "xla")


def _series(x, first, ratio):
    """first + first r(1) + first r(1) r(2) + ... until a term is negligible."""
    def more(k, term, total):
        return tf.reduce_max(tf.abs(term)) > 1e-17 * tf.reduce_max(tf.abs(total))

    def add(k, term, total):
        term = term * ratio(x, k)
        return k + 1.0, term, total + term

    _, _, total = tf.while_loop(more, add, (tf.constant(1.0, x.dtype), first, first))
    return total


def bessel_i1(x):
    return _series(x, x / 2, lambda x, k: (x / 2) ** 2 / (k * (k + 1)))


def bessel_i0_series(x):
    return _series(x, tf.ones_like(x), lambda x, k: (x / 2) ** 2 / (k * k))


@tf.custom_gradient
def bessel_i0(x):
    return bessel_i0_series(x), lambda dy: dy * bessel_i1(x)


@tf.custom_gradient
def bessel_i0_wrong(x):
    # I0' is I1; I0 itself is a plausible slip (the series' own sum).
    y = bessel_i0_series(x)
    return y, lambda dy: dy * y


def recurrence(x):
    return tf.scan(lambda h, xt: tf.tanh(0.9 * h + xt), x, initializer=tf.zeros((), x.dtype))


@tf.custom_gradient
def recurrence_wrong(x):
    """The scan, with a gradient that forgets that h_t feeds h_(t+1)."""
    h = recurrence(x)
    return h, lambda dy: dy * (1 - h ** 2)


def _modes_with(report, status):
    return {m.mode for m in report.modes if m.status == status}


def test_while_loop_series_with_custom_gradient_passes_in_every_mode_xla_included():
    # XLA once failed here: a persistent tape around the forward pass made the
    # while loop keep its intermediates in TensorLists XLA cannot size.
    x = np.linspace(0.5, 3.0, 4)
    report = check_gradients(bessel_i0, [x])
    assert _modes_with(report, "checked") == set(MODES)
    assert report.ok


def test_while_loop_series_with_wrong_custom_gradient_fails_in_every_mode():
    report = check_gradients(bessel_i0_wrong, [np.linspace(0.5, 3.0, 4)], raise_on_failure=False)
    assert not report.ok
    assert {p.mode for p in report.pairs if p.n_failed} == set(MODES)


@pytest.mark.parametrize("n, budget", [(4, 0.5), (3 * batching.SMALL_BATCH, 60.0),
                                       (3 * batching.SMALL_BATCH, 0.0)])
def test_scan_recurrence_passes_and_its_wrong_gradient_fails(monkeypatch, n, budget):
    # 4 rows run one at a time; 48 rows of a function with control flow run one
    # at a time within the budget (60 s: always) or batched (0 s: never alone).
    monkeypatch.setattr(batching, "ROWS_BUDGET_SECONDS", budget)
    x = np.random.default_rng(n).uniform(-1, 1, n)
    modes = ["function", "graph"]
    assert check_gradients(recurrence, [x], modes=modes).ok
    report = check_gradients(recurrence_wrong, [x], modes=modes, raise_on_failure=False)
    assert {p.mode for p in report.pairs if p.n_failed} == set(modes)
