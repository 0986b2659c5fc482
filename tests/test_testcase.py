"""GradientTestCase.assertGradientsCorrect in tf.test.TestCase classes, run for
real under pytest (pytester) and under python -m unittest (a subprocess)."""
import os
import subprocess
import sys
import textwrap

SOURCE = textwrap.dedent('''
    import numpy as np
    import tensorflow as tf

    import gradcheck


    @tf.custom_gradient
    def scaled_tanh(x):
        y = tf.tanh(x)
        return y, lambda dy: 1.01 * dy * (1 - y * y)


    class TanhGradientTest(gradcheck.GradientTestCase, tf.test.TestCase):
        def test_right(self):
            report = self.assertGradientsCorrect(tf.tanh, [np.array([0.1, -0.4])],
                                                 modes=["eager"])
            self.assertTrue(report.ok)

        def test_wrong(self):
            self.assertGradientsCorrect(scaled_tanh, [np.array([0.1, -0.4])], msg="tanh twin",
                                        modes=["eager"])
''')


def test_under_pytest_a_wrong_gradient_fails_with_the_report(pytester):
    pytester.makepyfile(test_tanh=SOURCE)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    # tf.test.TestCase brings its own test_session, always skipped.
    result.assert_outcomes(passed=1, failed=1, skipped=1)
    result.stdout.fnmatch_lines(["*AssertionError: tanh twin*", "*scaled_tanh*FAILED*"])


def test_under_unittest_a_wrong_gradient_fails_with_the_report(tmp_path):
    (tmp_path / "test_tanh.py").write_text(SOURCE)
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2")
    done = subprocess.run([sys.executable, "-m", "unittest", "-v", "test_tanh"], cwd=tmp_path,
                          env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 1, done.stderr
    assert "test_right (test_tanh.TanhGradientTest" in done.stderr
    assert "FAIL: test_wrong" in done.stderr
    assert "Ran 3 tests" in done.stderr and "FAILED (failures=1, skipped=1)" in done.stderr
    assert "tanh twin" in done.stderr and "FAILED; method" in done.stderr
