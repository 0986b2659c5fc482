"""The element-by-element rules every verdict rests on: what fails, what is
left out, what a kink entry must lie between, and which entry is reported as
the worst."""
import numpy as np

from gradcheck.numerics.compare import compare_block

ATOL, RTOL = 1e-8, 1e-7
# Large enough to span several of the pieces the comparison works in.
SHAPE = (700, 600)


def reference():
    return np.random.default_rng(0).uniform(-2, 2, size=SHAPE)


def test_an_entry_off_by_more_than_its_tolerance_fails_and_is_named_as_the_worst():
    expected = reference()
    actual = expected.copy()
    actual[650, 17] *= 1 + 1e-5
    actual[3, 4] *= 1 + 1e-8  # within rtol: passes
    result = compare_block(actual, expected, ATOL, RTOL)
    assert (result.n_failed, result.worst) == (1, (650, 17))
    assert np.isclose(result.max_rel_error, 1e-5, rtol=1e-3)


def test_a_nan_or_infinite_gradient_fails_where_the_reference_is_finite():
    expected = reference()
    actual = expected.copy()
    actual[10, 10], actual[600, 500] = np.nan, np.inf
    result = compare_block(actual, expected, ATOL, RTOL)
    assert result.n_failed == 2 and not result.ok
    assert result.max_abs_error == np.inf


def test_entries_where_the_reference_is_not_finite_are_left_out_and_counted():
    expected = reference()
    expected[5, 5], expected[400, 2] = np.nan, np.inf
    actual = reference()
    actual[5, 5] = 123.0
    result = compare_block(actual, expected, ATOL, RTOL)
    assert (result.n_failed, result.n_unreliable) == (0, 2) and result.ok


def test_entries_on_a_kink_are_left_out_and_counted():
    expected = reference()
    actual = expected.copy()
    actual[100, 100] += 1.0
    kinks = np.zeros(SHAPE, dtype=bool)
    kinks[100, 100] = kinks[0, 0] = True
    result = compare_block(actual, expected, ATOL, RTOL, kinks=kinks)
    assert (result.n_failed, result.n_kinks) == (0, 2)
    kinks[100, 100] = False
    assert compare_block(actual, expected, ATOL, RTOL, kinks=kinks).n_failed == 1


def test_entries_on_a_kink_with_bounds_pass_only_between_the_one_sided_differences():
    expected = reference()
    kinks = np.zeros(SHAPE, dtype=bool)
    kinks[100, 100] = kinks[0, 0] = kinks[650, 5] = True
    bounds = np.stack([expected - 0.5, expected + 0.5])  # one-sided slopes 1 apart
    actual = expected.copy()
    actual[0, 0] += 0.4  # inside
    actual[100, 100] += 0.6  # 0.1 outside
    result = compare_block(actual, expected, ATOL, RTOL, kinks=kinks, bounds=bounds)
    assert (result.n_failed, result.n_kinks, result.worst) == (1, 3, (100, 100))
    assert np.isclose(result.max_abs_error, 0.1)
    actual[100, 100] = np.nan
    assert compare_block(actual, expected, ATOL, RTOL, kinks=kinks, bounds=bounds).n_failed == 1


def test_two_gradients_compared_exactly_must_match_even_where_they_are_not_finite():
    first = reference()
    first[7, 7] = np.nan
    second = first.copy()
    assert compare_block(second, first, ATOL, RTOL, exact_nonfinite=True).ok
    second[7, 7] = 1.0
    assert compare_block(second, first, ATOL, RTOL, exact_nonfinite=True).n_failed == 1


def test_identical_gradients_agree_with_no_error():
    first = reference()
    result = compare_block(first.copy(), first, ATOL, RTOL, exact_nonfinite=True)
    assert result.ok and (result.n_failed, result.max_abs_error, result.max_rel_error) == (0, 0, 0)


def test_the_reference_uncertainty_widens_what_an_entry_may_differ_by():
    expected = reference()
    tolerance = ATOL + RTOL * np.abs(expected)
    actual = expected + 1.5 * tolerance
    assert not compare_block(actual, expected, ATOL, RTOL).ok
    assert compare_block(actual, expected, ATOL, RTOL, slack=tolerance).ok


def test_an_entry_that_passes_only_on_a_large_uncertainty_is_inconclusive_not_right():
    # The uncertainty counts up to the tolerance of the block's largest entry:
    # here 1e-8 + 1e-7 * 2, far below the 1e-3 that a tiny eps can leave.
    expected = reference()
    actual = expected.copy()
    actual[5, 7] += 1e-5  # within the uncertainty, beyond what it may count
    actual[600, 1] += 1e-2  # beyond even the whole uncertainty
    result = compare_block(actual, expected, ATOL, RTOL, slack=np.full(SHAPE, 1e-3))
    assert not result.ok
    assert (result.n_failed, result.n_inconclusive, result.worst) == (1, 1, (600, 1))
    assert np.isclose(result.worst_slack, ATOL + RTOL * np.abs(expected).max())


def test_a_block_whose_only_nonzero_entries_are_unchecked_is_undecided():
    expected = np.zeros((2, 2))
    expected[[0, 1], [0, 1]] = np.nan  # sqrt's differences at 0, on the diagonal
    actual = np.diag([12345.0, 12345.0])
    result = compare_block(actual, expected, ATOL, RTOL)
    assert (result.n_unreliable, result.undecided, result.unchecked) == (2, True, (0, 0))
    assert not result.ok
    expected[1, 1], actual[1, 1] = 0.5, 0.5  # one entry that could have been wrong
    decided = compare_block(actual, expected, ATOL, RTOL)
    assert decided.ok and decided.n_unreliable == 1 and not decided.undecided
