"""Once one mode's Jacobian is known, a later mode's comes from one VJP per group
of rows that share no column, or for a dense Jacobian from a few random
projections, and only when it matches: a later mode whose gradient differs in
any entry is still built in full and blamed at that entry."""
import numpy as np
import pytest
import tensorflow as tf

from gradcheck import GradientCheckError, check_gradients
from gradcheck.execution import modes
from gradcheck.execution.inputs import normalise_inputs
from gradcheck.execution.outputs import FlatFunction, output_specs
from gradcheck.jacobian import analytic
from gradcheck.jacobian import known as compressed_rows

X = np.random.default_rng(11).uniform(0.5, 1.5, size=64)
SWAPPED = np.arange(64)
SWAPPED[[3, 40]] = [40, 3]


def elementwise(x):
    return tf.sin(x) * tf.exp(x / 4)


def _right_only_eagerly(wrong):
    """sin(x) with the right gradient eagerly and `wrong(dy, g)` once traced."""
    @tf.custom_gradient
    def sine(x):
        def grad(dy):
            right = dy * tf.cos(x)
            return right if tf.executing_eagerly() else wrong(dy, tf.cos(x))
        return tf.sin(x), grad
    return sine


def _traced_modes_failing(fn):
    with pytest.raises(GradientCheckError) as caught:
        check_gradients(fn, [X], method="full")
    report = caught.value.report
    return report, {p.mode for p in report.failed_pairs}


def _dense(sine):
    """sine(x) * (1 + mean(x)): every output depends on every input."""
    return lambda x: sine(x) * (1.0 + tf.reduce_mean(x))


def _elementwise(sine):
    return sine


SHAPES = pytest.mark.parametrize("shape", [_elementwise, _dense], ids=["grouped", "dense"])


@SHAPES
def test_later_modes_that_swap_two_outputs_gradients_fail_at_those_entries(shape):
    report, failing = _traced_modes_failing(
        shape(_right_only_eagerly(lambda dy, d: tf.gather(dy, SWAPPED) * d)))
    assert failing == {"function", "graph", "xla"}
    for pair in report.failed_pairs:
        assert pair.n_failed == 4  # (3, 3), (40, 40), (3, 40) and (40, 3)
        assert pair.worst_input in ("x[3]", "x[40]")


def test_later_modes_that_claim_an_entry_outside_the_pattern_fail_at_that_entry():
    extra = np.zeros(64)
    extra[5] = 0.5
    report, failing = _traced_modes_failing(
        _right_only_eagerly(lambda dy, d: dy * d + dy[0] * extra))
    assert failing == {"function", "graph", "xla"}
    for pair in report.failed_pairs:
        assert pair.n_failed == 1
        assert (pair.worst_output, pair.worst_input) == ("output[0]", "x[5]")


def test_later_modes_that_claim_an_entry_in_a_column_the_first_mode_has_empty_fail_there():
    kept = np.ones(64)
    kept[5] = 0.0  # x[5] reaches no output: column 5 of the Jacobian is zero
    extra = np.zeros(64)
    extra[5] = 0.5

    @tf.custom_gradient
    def masked_sine(x):
        def grad(dy):
            right = dy * tf.cos(x) * kept
            return right if tf.executing_eagerly() else right + dy[0] * extra
        return tf.sin(x) * kept, grad

    report, failing = _traced_modes_failing(masked_sine)
    assert failing == {"function", "graph", "xla"}
    for pair in report.failed_pairs:
        assert (pair.n_failed, pair.worst_output, pair.worst_input) == (1, "output[0]", "x[5]")


@SHAPES
def test_later_modes_slightly_wrong_at_one_element_fail_there(shape):
    scale = np.ones(64)
    scale[17] = 1.001
    report, failing = _traced_modes_failing(
        shape(_right_only_eagerly(lambda dy, d: dy * d * scale)))
    assert failing == {"function", "graph", "xla"}
    for pair in report.failed_pairs:
        assert (pair.n_failed, pair.worst_output, pair.worst_input) == (1, "output[17]", "x[17]")


def test_later_modes_that_leak_less_than_rtol_of_a_large_neighbour_fail_there():
    # y = 1000 x: each reading also holds what the next row leaks into its
    # column, 1e-5, below rtol * 1000 = 1e-4 but far above atol = 1e-8.
    @tf.custom_gradient
    def scaled(x):
        def grad(dy):
            right = 1000.0 * dy
            return right if tf.executing_eagerly() else right + 1e-5 * tf.roll(dy, 1, axis=0)
        return 1000.0 * x, grad

    report, failing = _traced_modes_failing(scaled)
    assert failing == {"function", "graph", "xla"}
    assert {p.n_failed for p in report.failed_pairs} == {64}  # every leaked entry


def test_swapped_rows_in_a_coarse_dtype_are_caught_whatever_the_seed():
    # bfloat16's rtol (5e-2) would let two weights' ratio pass for 1 about one
    # time in twenty: such tolerances are not grouped.
    swap = np.array([1, 0, 2, 3, 4, 5, 6, 7])

    @tf.custom_gradient
    def tripled(x):
        def grad(dy):
            return 3.0 * (dy if tf.executing_eagerly() else tf.gather(dy, swap))
        return 3.0 * x, grad

    x = np.linspace(0.5, 1.5, 8).astype(tf.bfloat16.as_numpy_dtype)
    for seed in range(20):
        report = check_gradients(tripled, [x], modes=["eager", "function"], seed=seed,
                                 raise_on_failure=False)
        assert {p.mode for p in report.failed_pairs} == {"function"}, seed


def _jacobians(fn, mode, x):
    """The mode's Jacobian row by row, its runner, the check's inputs and output specs."""
    flat = FlatFunction(fn)
    inputs = normalise_inputs(fn, [x])
    specs = output_specs(["output"], [np.asarray(fn(tf.constant(x)))])
    run = modes.runner(mode, flat, [x], [0], [0], "/device:CPU:0", x.size)
    run.start()
    scales = analytic.row_scales(x.size, np.random.default_rng(0))
    return analytic.analytic_jacobian(run, inputs, [0], specs, scales, x.size), run, inputs, specs


def _tolerance(k, i):
    return 1e-8, 1e-7


def test_grouped_rows_give_the_later_modes_jacobian_and_nothing_else():
    eager, _, inputs, specs = _jacobians(elementwise, "eager", X)
    function, run, _, _ = _jacobians(elementwise, "function", X)
    known = compressed_rows.KnownJacobian(eager, inputs, [0], specs, np.random.default_rng(1))
    grouped = known.jacobian(run, _tolerance)
    assert grouped is not None
    np.testing.assert_allclose(grouped[(0, 0)], function[(0, 0)], rtol=1e-15, atol=0)
    assert np.count_nonzero(grouped[(0, 0)]) == 64


def test_grouped_rows_are_refused_when_the_later_mode_differs_anywhere():
    eager, _, inputs, specs = _jacobians(elementwise, "eager", X)
    swapped = _right_only_eagerly(lambda dy, d: tf.gather(dy, SWAPPED) * d)
    _, run, _, _ = _jacobians(lambda x: swapped(x) * tf.exp(x / 4), "function", X)
    known = compressed_rows.KnownJacobian(eager, inputs, [0], specs, np.random.default_rng(1))
    assert known.jacobian(run, _tolerance) is None


def _off_at_one_entry(error):
    """The dense function, its traced gradient off by `error` at entry (0, 9)."""
    off = np.zeros(64)
    off[9] = error / (1.0 + X.mean())  # the sine's upstream gradient carries 1 + mean(x)
    return _dense(_right_only_eagerly(lambda dy, d: dy * d + dy[0] * off))


def test_later_modes_with_fewer_rows_than_projections_are_built_in_full():
    small = X[:compressed_rows.FEWEST_ROWS - 1]
    eager, _, inputs, specs = _jacobians(elementwise, "eager", small)
    _, run, _, _ = _jacobians(elementwise, "function", small)
    known = compressed_rows.KnownJacobian(eager, inputs, [0], specs, np.random.default_rng(1))
    assert known.jacobian(run, _tolerance) is None
    swapped = _right_only_eagerly(lambda dy, d: tf.reverse(dy, [0]) * d)
    with pytest.raises(GradientCheckError) as caught:
        check_gradients(swapped, [small], method="full")
    assert {p.mode for p in caught.value.report.failed_pairs} == {"function", "graph", "xla"}


def test_dense_later_modes_are_taken_from_projections_when_they_match():
    dense = _dense(_right_only_eagerly(lambda dy, d: dy * d))
    eager, _, inputs, specs = _jacobians(dense, "eager", X)
    _, run, _, _ = _jacobians(dense, "function", X)
    known = compressed_rows.KnownJacobian(eager, inputs, [0], specs, np.random.default_rng(1))
    projected = known.jacobian(run, _tolerance)
    assert projected is not None and projected is not eager
    assert projected[(0, 0)] is eager[(0, 0)]
    assert known.made == [projected]


@pytest.mark.parametrize("error, taken", [(5e-10, True), (3e-9, False), (1e-3, False)])
def test_projections_take_a_later_mode_only_within_a_quarter_of_the_columns_tolerance(error, taken):
    # Column 9's smallest tolerance is atol + rtol * min |J[:, 9]|, about
    # 1.08e-8, so its sums may stray by 2.7e-9. The weights are at most 4:
    # 5e-10 moves a sum by at most 2e-9; 3e-9 moves the dense projections'
    # by at least 3e-9.
    eager, _, inputs, specs = _jacobians(_off_at_one_entry(error), "eager", X)
    _, run, _, _ = _jacobians(_off_at_one_entry(error), "function", X)
    for seed in range(5):
        known = compressed_rows.KnownJacobian(eager, inputs, [0], specs,
                                              np.random.default_rng(seed))
        assert (known.jacobian(run, _tolerance) is not None) == taken, seed


def _opposite_errors_in_rows_3_and_40(error):
    """The dense function, its traced gradient off by +error in row 3 and by
    -error in row 40 of every column."""
    def wrong(dy, d):
        return dy * d + error / (1.0 + X.mean()) * (dy[3] - dy[40])
    return _dense(_right_only_eagerly(wrong))


@pytest.mark.slow
def test_projections_refuse_errors_in_two_rows_that_cancel_in_a_sum():
    # 1.5e-8 is just past the off-diagonal entries' tolerance (about 1.1e-8).
    # In a projection the column's sums move by 1.5e-8 (u_3 - u_40), which a
    # draw can bring within the allowance; it must not happen in all of them.
    fn = _opposite_errors_in_rows_3_and_40(1.5e-8)
    eager, _, inputs, specs = _jacobians(_dense(_right_only_eagerly(lambda dy, d: dy * d)),
                                         "eager", X)
    _, run, _, _ = _jacobians(fn, "function", X)
    taken = [seed for seed in range(1000)
             if compressed_rows.KnownJacobian(eager, inputs, [0], specs, np.random.default_rng(seed))
             .jacobian(run, _tolerance) is not None]
    assert taken == []


def test_later_modes_with_errors_in_two_rows_that_cancel_in_a_sum_fail_there():
    report, failing = _traced_modes_failing(_opposite_errors_in_rows_3_and_40(1.5e-8))
    assert failing == {"function", "graph", "xla"}
    for pair in report.failed_pairs:
        assert pair.worst_output in ("output[3]", "output[40]")


def _wrong_when_a_cotangent_is_zero(dy, d):
    has_zero = tf.cast(tf.reduce_any(tf.equal(dy, 0.0)), dy.dtype)
    return dy * d * (1.0 + 0.01 * has_zero)


def _drops_small_cotangents(dy, d):
    # The sine's cotangent carries 1 + mean(x), about 2: the full build's
    # smallest scale, 0.5, gets to about 1.
    return dy * d * tf.cast(tf.abs(dy) >= 1.5, dy.dtype)


def _wrong_for_mostly_zero_cotangents(dy, d):
    # A "sparse fast path" taken for one-hot cotangents, as the full build's are.
    mostly_zero = tf.math.count_nonzero(dy) <= tf.size(dy, out_type=tf.int64) // 2
    return tf.cond(mostly_zero, lambda: 1.01 * dy * d, lambda: dy * d)


@pytest.mark.parametrize("wrong", [pytest.param(_wrong_when_a_cotangent_is_zero, marks=pytest.mark.slow),
                                   _drops_small_cotangents,
                                   pytest.param(_wrong_for_mostly_zero_cotangents,
                                                marks=pytest.mark.slow)],
                         ids=["wrong-with-zeros", "drops-small", "wrong-when-mostly-zero"])
def test_dense_later_modes_whose_gradient_is_not_linear_in_its_cotangent_fail(wrong):
    # A projection's dense cotangent of weights between 1 and 2 would not show
    # any of these: the sparse and one-hot projections do.
    report, failing = _traced_modes_failing(_dense(_right_only_eagerly(wrong)))
    assert failing == {"function", "graph", "xla"}
    assert all(p.n_failed > 1 for p in report.failed_pairs)


def test_projections_take_a_correct_float32_mode_with_large_entries():
    # Every entry is about 100: float32 rounding of the column sums is far
    # above a quarter of atol (2.5e-5), and far below a quarter of atol + rtol * 100.
    x = X.astype(np.float32)
    def spread(x):
        return 100.0 * tf.reduce_sum(x) * tf.ones_like(x) + tf.sin(x)
    eager, _, inputs, specs = _jacobians(spread, "eager", x)
    _, run, _, _ = _jacobians(spread, "function", x)
    for seed in range(5):
        known = compressed_rows.KnownJacobian(eager, inputs, [0], specs,
                                              np.random.default_rng(seed))
        assert known.jacobian(run, lambda k, i: (1e-4, 1e-4)) is not None, seed
