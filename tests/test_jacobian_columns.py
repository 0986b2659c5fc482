"""When the inputs are the smaller side, the Jacobian is built from columns:
JVPs through the gradient in use, verified against its VJPs."""
import numpy as np
import pytest
import tensorflow as tf

from gradcheck import check_gradients
from gradcheck.jacobian import analytic

X = np.random.default_rng(3).uniform(0.5, 1.5, size=4)
WEIGHTS = np.arange(1.0, 31.0)[:, None]


@pytest.fixture
def column_builds(monkeypatch):
    """The outcome of every attempt to build a Jacobian from columns."""
    outcomes = []
    build = analytic.jacobian_by_columns

    def recorded(*args, **kwargs):
        try:
            blocks = build(*args, **kwargs)
        except Exception as error:
            outcomes.append(type(error).__name__)
            raise
        outcomes.append("built")
        return blocks

    monkeypatch.setattr(analytic, "jacobian_by_columns", recorded)
    return outcomes


def spread(x):
    return tf.sin(x)[None] * WEIGHTS


@tf.custom_gradient
def spread_wrong_below_row_20(x):
    def grad(dy):
        weights = np.where(WEIGHTS >= 20, 1.1 * WEIGHTS, WEIGHTS)
        return tf.reduce_sum(dy * weights, axis=0) * tf.cos(x)
    return spread(x), grad


@tf.custom_gradient
def spread_ignoring_the_upstream_gradient(x):
    return spread(x), lambda dy: tf.reduce_sum(WEIGHTS) * tf.cos(x)


@tf.custom_gradient
def spread_with_a_gradient_quadratic_in_dy(x):
    return spread(x), lambda dy: tf.reduce_sum(dy * tf.abs(dy) * WEIGHTS, axis=0) * tf.cos(x)


# One mode a check: later modes of a check take their Jacobian from projections
# when it matches the first's (test_compressed_rows.py).
MODES = ["eager", "function", "graph", "xla"]


@pytest.mark.parametrize("mode", MODES)
def test_a_right_gradient_passes_in_every_mode_from_columns(column_builds, mode):
    report = check_gradients(spread, [X], modes=[mode])
    assert [p.mode for p in report.pairs] == [mode]
    assert column_builds == ["built"]


@pytest.mark.parametrize("mode", MODES)
def test_a_gradient_wrong_in_some_outputs_is_found_there(column_builds, mode):
    report = check_gradients(spread_wrong_below_row_20, [X], modes=[mode], raise_on_failure=False)
    assert column_builds == ["built"]
    pair = report.failed_pairs[0]
    assert pair.n_failed == 11 * X.size  # rows 19..29 (weights 20..30), every column
    assert int(pair.worst_output.split("[")[1].split(",")[0]) >= 19


@pytest.mark.parametrize("fn", [spread_ignoring_the_upstream_gradient,
                                spread_with_a_gradient_quadratic_in_dy])
def test_a_gradient_not_linear_in_its_upstream_gradient_is_built_from_rows_and_caught(
        fn, column_builds):
    report = check_gradients(fn, [X], raise_on_failure=False)
    assert set(column_builds) == {"ColumnsUnusable"}
    assert any("not linear in its upstream gradient" in note for note in report.notes)
    assert not report.ok
    assert {p.mode for p in report.failed_pairs} == {"eager", "function", "graph", "xla"}
