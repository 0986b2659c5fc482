"""Which columns are sharpened before the verdict: exactly those where the
comparison would find an entry wrong, by the same tolerance and kink rule.
A column the comparison fails but sharpening skipped would rest a verdict of
"wrong" on a difference the reference never tried to resolve."""
import numpy as np
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from gradcheck.methods.sharpen import disagreeing_columns
from gradcheck.numerics.compare import Tolerances, compare_block

ROWS, COLUMNS = 6, 5
finite = st.floats(-4.0, 4.0, allow_nan=False, width=64)


def failing_columns(actual, expected, tolerance, kinks=None, bounds=None):
    """The columns in which compare_block finds a failing entry."""
    return np.array([compare_block(actual[:, [c]], expected[:, [c]], *tolerance,
                                   None if kinks is None else kinks[:, [c]],
                                   bounds=None if bounds is None else bounds[:, :, [c]]).n_failed > 0
                     for c in range(actual.shape[1])])


@given(expected=hnp.arrays(np.float64, (ROWS, COLUMNS), elements=finite),
       noise=hnp.arrays(np.float64, (ROWS, COLUMNS), elements=st.sampled_from(
           [0.0, 1e-9, 1e-6, 3e-5, 2e-4, 1e-2, np.nan])),
       kinks=hnp.arrays(bool, (ROWS, COLUMNS)),
       spread=hnp.arrays(np.float64, (2, ROWS, COLUMNS), elements=st.floats(0.0, 1e-3)),
       dtypes=st.sampled_from([("float64", "float64"), ("float64", "float32"),
                               ("float32", "float64"), ("complex128", "float32")]))
def test_sharpening_chooses_exactly_the_columns_the_comparison_fails(expected, noise, kinks,
                                                                     spread, dtypes):
    tolerance = Tolerances().of_pair(*dtypes)
    actual = expected * (1 + noise) + noise
    bounds = np.stack([expected - spread[0], expected + spread[1]])
    chosen = disagreeing_columns(actual, expected, tolerance, COLUMNS, kinks, bounds)
    assert (chosen == failing_columns(actual, expected, tolerance, kinks, bounds)).all()


def test_a_float32_output_of_float64_inputs_is_chosen_by_float32_tolerances():
    # The input's own float64 tolerance would choose this column; the verdict,
    # which judges d float32 / d float64 as float32, passes it.
    expected = np.ones((3, 2))
    actual = expected.copy()
    actual[1, 0] += 1e-6
    tolerance = Tolerances().of_pair("float64", "float32")
    assert tolerance == Tolerances().of_dtype("float32")
    chosen = disagreeing_columns(actual, expected, tolerance, 2)
    assert not chosen.any() and not failing_columns(actual, expected, tolerance).any()
    actual[1, 0] += 1e-3
    chosen = disagreeing_columns(actual, expected, tolerance, 2)
    assert chosen.tolist() == [True, False] == failing_columns(actual, expected, tolerance).tolist()
