"""The pytest plugin, run for real in a subprocess with pytester."""
import json
import os
import re

import pytest

HEADER = """
import numpy as np
import pytest
import tensorflow as tf
"""

CHECKS = HEADER + """
def test_sin(gradcheck):
    gradcheck(tf.sin, [np.linspace(0.1, 1.0, 3)])

@tf.custom_gradient
def doubled_wrongly(x):
    return 2.0 * x, lambda dy: 3.0 * dy

def test_wrong(gradcheck):
    gradcheck(doubled_wrongly, [np.ones(2)], modes=["eager"])
"""


def run(pytester, source, *args):
    pytester.makepyfile(test_checks=source)
    return pytester.runpytest_subprocess("-p", "no:cacheprovider", *args)


@pytest.mark.slow
def test_summary_lists_every_check_worst_first(pytester):
    result = run(pytester, CHECKS)
    result.assert_outcomes(passed=1, failed=1)
    lines = result.stdout.lines
    start = next(i for i, line in enumerate(lines) if re.fullmatch(r"=+ gradcheck =+", line))
    header, first = lines[start + 1], lines[start + 2]
    assert header.split() == ["test", "function", "source", "device", "mode", "dtype", "shape",
                              "err/tol", "verdict", "n"]
    assert "test_wrong" in first and "custom_gradient" in first and "FAIL" in first
    assert sum("test_sin" in line and " ok " in line for line in lines) == 4  # four modes


@pytest.mark.slow
def test_json_report_has_rows_and_environment(pytester):
    result = run(pytester, CHECKS, "--gradcheck-json=out/report.json")
    result.assert_outcomes(passed=1, failed=1)
    document = json.loads((pytester.path / "out" / "report.json").read_text())
    assert document["environment"]["tensorflow"].startswith("2.")
    assert document["environment"]["devices"] == ["/device:CPU:0"]
    verdicts = {(r["test"].split("::")[-1], r["mode"], r["verdict"]) for r in document["rows"]}
    assert ("test_wrong", "eager", "FAIL") in verdicts
    assert {("test_sin", m, "ok") for m in ("eager", "function", "graph", "xla")} <= verdicts
    assert "Sin" in document["gradients_used"]


@pytest.mark.slow
def test_junit_xml_carries_a_property_per_check(pytester):
    run(pytester, CHECKS, "--junitxml=junit.xml")
    xml = (pytester.path / "junit.xml").read_text()
    assert 'property name="gradcheck" value="sin: ok' in xml
    assert 'property name="gradcheck" value="doubled_wrongly: FAILED' in xml


@pytest.mark.slow
def test_options_and_their_ini_twins(pytester):
    source = HEADER + """
def test_modes(gradcheck):
    report = gradcheck(tf.sin, [np.ones(2)])
    assert {m.mode for m in report.modes} == {"eager", "graph"}
"""
    assert run(pytester, source, "--gradcheck-modes=eager,graph").ret == 0
    pytester.makeini("[pytest]\ngradcheck_modes = eager, graph\n")
    assert run(pytester, source).ret == 0


def test_marker_overrides_the_command_line_and_strict_markers_are_clean(pytester):
    source = HEADER + """
@pytest.mark.gradcheck(modes=["function"], tolerance_scale=1e9)
def test_marked(gradcheck):
    @tf.custom_gradient
    def slightly_off(x):
        return x * x, lambda dy: 2.0 * x * dy * 1.01
    report = gradcheck(slightly_off, [np.ones(2)])
    assert {m.mode for m in report.modes} == {"function"}

@pytest.mark.gradcheck(moods=["eager"])
def test_typo(gradcheck):
    gradcheck(tf.sin, [np.ones(2)])
"""
    result = run(pytester, source, "--strict-markers", "--gradcheck-modes=eager")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(["*unknown gradcheck option(s) moods*"])


@pytest.mark.slow
def test_tolerance_scale_and_strict(pytester):
    source = HEADER + """
def test_cube_like(gradcheck):
    gradcheck(tf.sin, [np.ones(2)], modes=["eager"])
"""
    assert run(pytester, source, "--gradcheck-tolerance-scale=2").ret == 0
    bad = run(pytester, source, "--gradcheck-tolerance-scale=-1")
    assert bad.ret == pytest.ExitCode.USAGE_ERROR
    bad.stderr.fnmatch_lines(["*tolerance scale must be positive*"])


@pytest.mark.slow
def test_strict_turns_an_unsupported_mode_into_a_failure(pytester):
    source = HEADER + """
def branches(x):
    if x.numpy().sum() > 0:
        return x * 2.0
    return -x

def test_eager_only(gradcheck):
    gradcheck(branches, [np.ones(2)])
"""
    run(pytester, source).assert_outcomes(passed=1)
    strict = run(pytester, source, "--gradcheck-strict")
    strict.assert_outcomes(failed=1)
    strict.stdout.fnmatch_lines(["*strict: function mode on CPU:0 could not be checked*"])


@pytest.mark.slow
def test_gradcheck_fixture_works_inside_hypothesis_given(pytester):
    source = HEADER + """
from hypothesis import given, settings, strategies as st

@settings(max_examples=5, deadline=None)
@given(st.floats(0.5, 2.0))
def test_exp(gradcheck, value):
    gradcheck(tf.exp, [np.array([value])], modes=["function"])
"""
    result = run(pytester, source)
    result.assert_outcomes(passed=1)
    assert "function_scoped_fixture" not in result.stdout.str()
    result.stdout.fnmatch_lines(["*test_exp*exp*function*ok*5"])


@pytest.mark.slow
def test_tf_device_is_parametrized_and_a_missing_gpu_skips_with_the_reason(pytester):
    source = HEADER + """
def test_on(gradcheck, tf_device):
    gradcheck(tf.sin, [np.ones(2)], devices=[tf_device], modes=["eager"])
"""
    result = run(pytester, source, "--gradcheck-devices=cpu,gpu", "-rs")
    result.assert_outcomes(passed=1, skipped=1)
    result.stdout.fnmatch_lines(["*device 'gpu' is not available: TensorFlow sees*"])


@pytest.mark.slow
def test_two_logical_cpus_exercise_the_multi_device_path(pytester):
    pytester.makeconftest("""
import tensorflow as tf
cpu = tf.config.list_physical_devices("CPU")[0]
tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * 2)
""")
    source = HEADER + """
def test_both(gradcheck):
    report = gradcheck(tf.sin, [np.ones(2)], modes=["eager"])
    assert {p.device for p in report.pairs} == {"CPU:0", "CPU:1"}
"""
    run(pytester, source, "--gradcheck-devices=all").assert_outcomes(passed=1)


@pytest.mark.slow
def test_xdist_workers_checks_are_all_gathered(pytester):
    pytest.importorskip("xdist")
    source = HEADER + "".join(f"""
def test_{i}(gradcheck):
    gradcheck(tf.sin, [np.full(2, {i + 1}.0)], modes=["eager"])
""" for i in range(4))
    result = run(pytester, source, "-n", "2", "--gradcheck-json=report.json")
    result.assert_outcomes(passed=4)
    rows = json.loads((pytester.path / "report.json").read_text())["rows"]
    assert {r["test"].split("::")[-1] for r in rows} == {f"test_{i}" for i in range(4)}
    assert sum(line.startswith("test_checks.py::test_") for line in result.stdout.lines) == 4


@pytest.mark.slow
def test_a_failure_leaves_a_heatmap_in_the_artifacts_folder(pytester):
    pytest.importorskip("matplotlib")
    result = run(pytester, CHECKS, "--gradcheck-artifacts=artifacts")
    result.assert_outcomes(passed=1, failed=1)
    images = list((pytester.path / "artifacts").glob("*.png"))
    assert len(images) == 1 and "test_wrong" in images[0].name
    assert images[0].read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


COVERED_PACKAGE = """
import tensorflow as tf

@tf.RegisterGradient("MyopsSquareGrad")
def _square_grad(op, grad):
    return grad * 2.0 * op.inputs[0]

@tf.RegisterGradient("MyopsForgottenGrad")
def _forgotten_grad(op, grad):
    return grad
"""

COVERAGE_TESTS = HEADER + """
import myops

def test_square(gradcheck):
    gradcheck(lambda x: tf.square(x), [np.ones(2)], override_map={"Square": "MyopsSquareGrad"})
"""


@pytest.mark.slow
def test_coverage_gate_fails_the_run_on_a_gradient_nobody_checked(pytester):
    pytester.makepyfile(myops=COVERED_PACKAGE)
    pytester.syspathinsert()
    result = run(pytester, COVERAGE_TESTS, "--gradcheck-require-coverage=myops")
    result.assert_outcomes(passed=1)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(["*1 gradient(s) defined by myops were never checked:*",
                                 "*MyopsForgottenGrad: gradient registered by myops._forgotten_grad*"])
    assert "MyopsSquareGrad:" not in result.stdout.str()


@pytest.mark.slow
def test_coverage_gate_passes_when_every_gradient_is_checked(pytester):
    pytester.makepyfile(myops=COVERED_PACKAGE.split('@tf.RegisterGradient("MyopsForgottenGrad")')[0])
    pytester.syspathinsert()
    result = run(pytester, COVERAGE_TESTS, "--gradcheck-require-coverage=myops")
    assert result.ret == 0


def test_a_run_without_gradcheck_does_not_import_tensorflow(pytester):
    pytester.makepyfile(test_plain="""
import sys
def test_nothing():
    assert "tensorflow" not in sys.modules
""")
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)
    # ...and the plugin was loaded all the same: its options are known.
    assert "--gradcheck-json" in pytester.runpytest_subprocess("--help").stdout.str()


DEFUN_PACKAGE = """
import tensorflow as tf
from tensorflow.python.framework import function

@function.Defun(tf.float64, tf.float64)
def _crazy(x, dy):
    return x + dy

@function.Defun(tf.float64, grad_func=_crazy)
def doubled(x):
    return x * 2

@function.Defun(tf.float64, python_grad_func=lambda op, dy: dy)
def tripled(x):
    return x * 3
"""


@pytest.mark.slow
def test_coverage_gate_counts_defuns_with_their_own_gradient(pytester):
    pytester.makepyfile(defunops=DEFUN_PACKAGE)
    pytester.syspathinsert()
    source = HEADER + """
import defunops

def test_doubled(gradcheck):
    gradcheck(defunops.doubled, [np.array(1.0)], reference=lambda x, dy: x + dy)
"""
    result = run(pytester, source, "--gradcheck-require-coverage=defunops")
    result.assert_outcomes(passed=1)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(["*1 gradient(s) defined by defunops were never checked:*",
                                 "*Defun defunops.tripled with its own gradient*"])


@pytest.mark.slow
def test_hypothesis_profiles_are_selected_from_the_plugin_options(pytester):
    source = HEADER + """
from hypothesis import settings

def test_profile():
    assert settings.default.derandomize is True
    assert settings.default.deadline is None
    assert settings.default.max_examples == 50
"""
    run(pytester, source, "--gradcheck-hypothesis-profile=ci").assert_outcomes(passed=1)
    wrong = run(pytester, source, "--gradcheck-hypothesis-profile=fast")
    assert wrong.ret == pytest.ExitCode.USAGE_ERROR


BAD_INPUT_TESTS = HEADER + """
def test_none_output(gradcheck):
    gradcheck(lambda x: None, [np.ones(2)])

def test_nan_input(gradcheck):
    gradcheck(tf.sin, [np.array([1.0, np.nan])])

def test_random_forward(gradcheck):
    gradcheck(lambda x: x * tf.random.uniform((2,), dtype=tf.float64), [np.ones(2)])

def test_no_kernel(gradcheck):
    gradcheck(tf.math.erfinv, [np.full(2, 0.1, dtype=np.float16)])

def test_still_running_afterwards(gradcheck):
    gradcheck(tf.sin, [np.ones(2)], modes=["eager"])
"""


@pytest.mark.slow
def test_bad_input_fails_its_own_test_with_the_reason_and_the_session_goes_on(pytester):
    result = run(pytester, BAD_INPUT_TESTS)
    result.assert_outcomes(passed=1, failed=4)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    output = result.stdout.str()
    for reason in ("returned None", r"input x\[1\] is nan", "not deterministic",
                   "no kernel for Erfinv with dtype float16"):
        assert re.search(f"CheckSetupError: .*{reason}", output), reason


BAD_OPTION_TESTS = HEADER + """
@tf.custom_gradient
def fifty_times_too_large(x):
    return x * x, lambda dy: dy * 100.0 * x

@pytest.mark.gradcheck(["eager"])
def test_positional(gradcheck):
    gradcheck(tf.sin, [np.ones(2)])

@pytest.mark.gradcheck(tolerance_scale=-1)
def test_negative_scale(gradcheck):
    gradcheck(fifty_times_too_large, [np.ones(2)], modes=["eager"])

@pytest.mark.gradcheck(tolerance_scale=float("nan"))
def test_nan_scale(gradcheck):
    gradcheck(fifty_times_too_large, [np.ones(2)], modes=["eager"])

@pytest.mark.gradcheck(atol={np.float64: -1.0})
def test_negative_atol(gradcheck):
    gradcheck(fifty_times_too_large, [np.ones(2)], modes=["eager"])
"""


@pytest.mark.slow
def test_a_marker_option_that_would_pass_anything_fails_its_test(pytester):
    result = run(pytester, BAD_OPTION_TESTS)
    result.assert_outcomes(failed=4)
    result.stdout.fnmatch_lines_random([
        "*OptionError: @pytest.mark.gradcheck takes keywords only, got (*eager*,)*",
        "*OptionError: tolerance_scale must be a finite number >= 0, got -1*",
        "*OptionError: tolerance_scale must be a finite number >= 0, got nan*",
        "*OptionError: atol[[]<class 'numpy.float64'>[]] must be a finite number >= 0*",
    ])


@pytest.mark.parametrize("scale", ["nan", "inf", "0"])
def test_a_command_line_tolerance_scale_must_be_positive_and_finite(pytester, scale):
    result = run(pytester, HEADER + "def test_nothing():\n    pass\n",
                 f"--gradcheck-tolerance-scale={scale}")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*tolerance scale must be positive and finite*"])


@pytest.mark.parametrize("args, message", [
    (["--gradcheck-modes=eager,nope"], "*--gradcheck-modes: unknown mode(s) [[]'nope'[]]; choose from*"),
    (["--gradcheck-method=nope"], "*--gradcheck-method: unknown method 'nope'; choose from*"),
    (["-o", "gradcheck_tolerance_scale=abc"], "*gradcheck_tolerance_scale = 'abc'*must be a number*"),
])
def test_a_misspelt_session_option_is_a_usage_error_at_start_up(pytester, args, message):
    result = run(pytester, HEADER + "def test_nothing():\n    pass\n", *args)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([message])


PLAIN = "def test_nothing():\n    pass\n"


@pytest.mark.parametrize("make, args, message", [
    ("folder", ["--gradcheck-json=out"], "*--gradcheck-json: 'out' is a folder; give a file path*"),
    ("file", ["--gradcheck-json=out/report.json"],
     "*--gradcheck-json: cannot create 'out/report.json': '*out' is a file, not a folder*"),
    ("file", ["--gradcheck-artifacts=out"], "*--gradcheck-artifacts: 'out' exists and is not a folder*"),
    (None, ["--gradcheck-require-coverage=nonexistent_pkg"],
     "*--gradcheck-require-coverage: no package 'nonexistent_pkg' can be imported here*"),
    (None, ["--gradcheck-require-coverage=nonexistent_pkg.sub"],
     "*--gradcheck-require-coverage: cannot look up the package 'nonexistent_pkg.sub'*"),
])
def test_an_unusable_output_or_coverage_package_is_a_usage_error_at_start_up(
        pytester, make, args, message):
    if make == "folder":
        pytester.mkdir("out")
    elif make == "file":
        pytester.makefile("", out="")
    result = run(pytester, PLAIN, *args)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([message])
    assert "passed" not in result.stdout.str()  # refused before any test ran


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() == 0,
                    reason="root writes into read-only folders")
def test_a_json_report_in_a_read_only_folder_is_a_usage_error(pytester):
    folder = pytester.mkdir("locked")
    folder.chmod(0o500)
    try:
        result = run(pytester, PLAIN, "--gradcheck-json=locked/report.json")
    finally:
        folder.chmod(0o700)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--gradcheck-json: cannot write in '*locked': permission denied*"])


def test_a_report_that_cannot_be_written_at_the_end_fails_the_run_in_plain_words(pytester):
    source = """
import os
def test_takes_the_reports_place():
    os.mkdir("report.json")  # after the start-up check, before the report is written
"""
    result = run(pytester, source, "--gradcheck-json=report.json")
    assert_failed_at_the_end(result, "--gradcheck-json: could not write the report to "
                                     "'report.json': *Is a directory*")
    assert "JSON report written" not in result.stdout.str()


def test_a_coverage_package_that_raises_on_import_fails_the_run_in_plain_words(pytester):
    pytester.makepyfile(raising_pkg="raise RuntimeError('the package is broken')\n")
    result = run(pytester, PLAIN, "--gradcheck-require-coverage=raising_pkg")
    assert_failed_at_the_end(result, "--gradcheck-require-coverage: cannot import 'raising_pkg': "
                                     "RuntimeError: the package is broken")


def assert_failed_at_the_end(result, message):
    """The test passed, the run failed, with the message and no traceback."""
    result.assert_outcomes(passed=1)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines([f"gradcheck: error: {message}"])
    assert "Traceback" not in result.stdout.str() + result.stderr.str()


@pytest.mark.slow
def test_an_artifact_that_cannot_be_written_keeps_the_tests_own_error(pytester):
    pytest.importorskip("matplotlib")
    source = CHECKS.replace("def test_wrong(gradcheck):\n", """def test_wrong(gradcheck):
    open("artifacts", "w").close()  # after the start-up check: the heatmap cannot be written
""")
    result = run(pytester, source, "--gradcheck-artifacts=artifacts")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines([
        "*gradcheck could not write the failure heatmaps to --gradcheck-artifacts='artifacts': "
        "FileExistsError*",
        "FAILED test_checks.py::test_wrong - gradcheck.errors.GradientCheckError*"])


INTERRUPTED = HEADER + """
import os
import pathlib
import signal
import time

def test_quick(gradcheck):
    gradcheck(tf.sin, [np.ones(2)], modes=["eager"])

def test_interrupt():
    reported = pathlib.Path({folder!r}) / "quick_reported"
    deadline = time.monotonic() + 120
    while not reported.exists():  # until the main process has test_quick's report
        assert time.monotonic() < deadline
        time.sleep(0.05)
    os.kill(int(reported.read_text().split()[0]), signal.SIGINT)  # Ctrl-C
    time.sleep(30)
"""

# In the main pytest process (the controller under xdist): when test_quick's
# report arrives, note the pid and how many rows the plugin holds by then.
SIGNAL_WHEN_REPORTED = """
import os
import pathlib

from gradcheck.testing.plugin import LOG

CONFIG = []

def pytest_configure(config):
    CONFIG.append(config)

def pytest_runtest_logreport(report):
    # The main process, read from the config: the environment of a run inside an
    # xdist worker (this suite under -n 2) says "worker" to its children too.
    if not hasattr(CONFIG[0], "workerinput") and report.when == "teardown" \\
            and report.nodeid.endswith("test_quick"):
        rows = len(CONFIG[0].stash[LOG].rows)
        pathlib.Path({folder!r}, "quick_reported").write_text(f"{{os.getpid()}} {{rows}}")
"""


@pytest.mark.slow
@pytest.mark.parametrize("args", [pytest.param(["-n", "2"], id="xdist"), pytest.param([], id="plain")])
def test_ctrl_c_keeps_the_rows_of_the_checks_that_ran(pytester, args):
    if args:
        pytest.importorskip("xdist")
    folder = str(pytester.path)
    pytester.makeconftest(SIGNAL_WHEN_REPORTED.format(folder=folder))
    result = run(pytester, INTERRUPTED.format(folder=folder), *args, "--gradcheck-json=report.json")
    assert result.ret == pytest.ExitCode.INTERRUPTED
    result.stdout.fnmatch_lines(["*1 passed*"])
    # The row reached the main process with the test's report, not at the
    # worker's end, which an interruption can take away.
    assert (pytester.path / "quick_reported").read_text().split()[1] == "1"
    rows = json.loads((pytester.path / "report.json").read_text())["rows"]
    assert [(r["test"].split("::")[-1], r["verdict"]) for r in rows] == [("test_quick", "ok")]


def test_a_worker_hands_on_each_row_and_gradient_once():
    from gradcheck.testing.session import CheckLog

    worker, controller = CheckLog(), CheckLog()
    worker.add_skipped("t.py::a", "f", "first")
    worker.gradients_used.add("Sin")
    controller.merge(worker.take_unsent())  # with test a's report
    worker.add_skipped("t.py::b", "f", "second")
    worker.gradients_used.update({"Sin", "Cos"})
    controller.merge(worker.take_unsent())  # with test b's report
    controller.merge(worker.take_unsent())  # at the worker's end: nothing new
    assert [row["reason"] for row in controller.rows] == ["first", "second"]
    assert controller.gradients_used == {"Sin", "Cos"}
