"""--gradcheck-scan=TARGET: the scan as pytest items, run for real with pytester."""
import json
import os
import pathlib

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]


def scan_run(pytester, monkeypatch, *args, path=ROOT / "examples" / "custom_ops"):
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(path), str(ROOT)]))
    return pytester.runpytest_subprocess("-p", "no:cacheprovider", "-rs", *args)


@pytest.mark.slow
def test_a_scan_runs_one_test_per_op_into_the_summary_json_and_coverage_gate(
        pytester, monkeypatch):
    result = scan_run(pytester, monkeypatch, "--gradcheck-scan=ops", "--gradcheck-modes=eager",
                      "--gradcheck-json=out.json", "--gradcheck-require-coverage=ops")
    result.assert_outcomes(passed=2, skipped=2)
    result.stdout.fnmatch_lines([
        "*not differentiable: marked tf.no_gradient",
        "*not differentiable: no gradient is registered and the op is not marked tf.no_gradient*",
    ])
    rows = json.loads((pytester.path / "out.json").read_text())["rows"]
    assert {r["test"] for r in rows} == {"::gradcheck-scan[Cube]", "::gradcheck-scan[RollAndSum]"}
    # The scan checked Cube and RollAndSum: only the gradients kept for
    # override_map are left for the gate to name, and they fail the run.
    result.stdout.fnmatch_lines(["2 gradient(s) defined by ops were never checked:",
                                 "  CubeGradForgetsTheSquare: *", "  CubeStraightThrough: *"])
    assert result.ret == pytest.ExitCode.TESTS_FAILED


@pytest.mark.slow
def test_a_wrong_gradient_fails_its_item_with_the_report_and_a_reproduction(
        pytester, monkeypatch):
    result = scan_run(pytester, monkeypatch, "--gradcheck-scan=tests.bugzoo.zoo_ops",
                      "--gradcheck-modes=eager", "-k", "ZooMatVecNoTranspose", path=ROOT)
    result.assert_outcomes(failed=1, deselected=19)
    result.stdout.fnmatch_lines([
        "*The gradient of output with respect to x is wrong in eager mode on CPU:0*",
        "Reproduce with:",
        "    check_gradients(lambda a, x: tests.bugzoo.zoo_ops.library.ZooMatVecNoTranspose(*",
    ])


def test_a_scan_target_that_cannot_be_read_is_a_usage_error(pytester, monkeypatch):
    result = scan_run(pytester, monkeypatch, "--gradcheck-scan=no_such_package_here")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["ERROR: --gradcheck-scan: cannot import 'no_such_package_here'*"])


@pytest.mark.slow
def test_under_strict_an_op_without_valid_inputs_fails_its_item(pytester, monkeypatch):
    # A hint that leaves no finite forward pass: RollAndSum has no valid inputs.
    pytester.makepyfile(hinted_ops="""
        from ops import library  # noqa: F401  (the scan finds the library here)
        GRADCHECK_SCAN_HINTS = {"RollAndSum": {"inputs": {"x": [float("nan")] * 3}}}
    """)
    args = ("--gradcheck-scan=hinted_ops", "--gradcheck-modes=eager")
    lenient = scan_run(pytester, monkeypatch, *args)
    lenient.assert_outcomes(passed=1, skipped=3)
    lenient.stdout.fnmatch_lines(["*no valid inputs: no inputs ran in float64, float32: *"
                                  "outputs not finite*"])
    strict = scan_run(pytester, monkeypatch, *args, "--gradcheck-strict")
    strict.assert_outcomes(passed=1, failed=1, skipped=2)
    strict.stdout.fnmatch_lines(["*strict: the scan found no valid inputs for RollAndSum: *"])


@pytest.mark.slow
def test_a_packages_defuns_are_items_and_count_for_the_coverage_gate(pytester, monkeypatch):
    pytester.makepyfile(scanned_defuns="""
        import tensorflow as tf
        from tensorflow.python.framework import function

        def _sin_2x_grad_forgets_chain_factor(op, dy):
            return tf.cos(2.0 * op.inputs[0]) * dy

        @function.Defun(tf.float64, python_grad_func=_sin_2x_grad_forgets_chain_factor)
        def sin_2x(x):
            return tf.sin(2.0 * x)

        def _cube_grad(op, dy):
            return dy * 3.0 * tf.square(op.inputs[0])

        @function.Defun(tf.float64, python_grad_func=_cube_grad)
        def cube(x):
            return x * x * x
    """)
    result = scan_run(pytester, monkeypatch, "--gradcheck-scan=scanned_defuns",
                      "--gradcheck-require-coverage=scanned_defuns", path=pytester.path)
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines([
        "*gradcheck scan of sin_2x (Defun scanned_defuns.sin_2x)*",
        "*The gradient of output with respect to x is wrong in graph mode on CPU:0*",
        "    from scanned_defuns import sin_2x",
    ])
    assert "were never checked" not in result.stdout.str()  # the scan covered both Defuns
