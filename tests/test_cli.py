"""python -m gradcheck check MODULE:FUNCTION, run as a user runs it."""
import os
import pathlib
import subprocess
import sys

import pytest

import gradcheck

# The gradcheck under test, not whichever one the environment installed.
GRADCHECK_ROOT = str(pathlib.Path(gradcheck.__file__).resolve().parents[1])

FUNCTIONS = """
import tensorflow as tf

def product(x, y):
    return tf.sin(x) * y

@tf.custom_gradient
def wrong(x):
    return x * x, lambda dy: dy * x
"""


@pytest.fixture
def module_dir(tmp_path):
    (tmp_path / "userops.py").write_text(FUNCTIONS)
    (tmp_path / "syntax_error.py").write_text("def f(x):\n    return x +\n")
    (tmp_path / "raises_on_import.py").write_text("raise RuntimeError('no GPU here')\n")
    return tmp_path


def gradcheck_cli(*args, cwd):
    return subprocess.run([sys.executable, "-m", "gradcheck", *args], cwd=cwd,
                          capture_output=True, text=True, timeout=300,
                          env={"PYTHONPATH": os.pathsep.join([str(cwd), GRADCHECK_ROOT]),
                               "TF_CPP_MIN_LOG_LEVEL": "2",
                               "PATH": "/usr/bin:/bin"})


@pytest.mark.slow
def test_a_right_gradient_exits_0_with_the_report(module_dir):
    result = gradcheck_cli("check", "userops:product", "--shape", "3,4", "--shape", "4",
                           "--dtype", "f4,double", "--modes", "eager,graph", cwd=module_dir)
    assert result.returncode == 0, result.stderr
    assert "gradcheck of 'product' (x: float32 (3, 4), y: float32 (4,)): OK" in result.stdout
    assert "gradcheck of 'product' (x: float64 (3, 4), y: float64 (4,)): OK" in result.stdout
    assert "[2/2] checking userops:product in float64" in result.stderr


def test_a_wrong_gradient_exits_1_with_the_finding_first(module_dir):
    result = gradcheck_cli("check", "userops:wrong", "--shape", "3", "--modes", "eager",
                           cwd=module_dir)
    assert result.returncode == 1
    assert result.stdout.startswith("The gradient of output with respect to x is wrong")


SLOW = pytest.mark.slow  # these import userops, and so TensorFlow, in the subprocess


@pytest.mark.parametrize("args, message", [
    (["check", "nosuchmodule:f", "--shape", "3"], "cannot import module 'nosuchmodule'"),
    pytest.param(["check", "userops:nothing", "--shape", "3"], "has no attribute 'nothing'",
                 marks=SLOW),
    (["check", "userops", "--shape", "3"], "expected MODULE:FUNCTION"),
    (["check", "userops:product", "--shape", "3,a"], "a shape is comma-separated non-negative"),
    pytest.param(["check", "userops:product", "--shape", "3", "--dtype", "float8"],
                 "unknown dtype(s) float8", marks=SLOW),
    pytest.param(["check", "userops:product", "--shape", "3", "--shape", "2,2"],
                 "the function raised", marks=SLOW),
    (["check", "syntax_error:f", "--shape", "3"],
     "module 'syntax_error' has a syntax error: invalid syntax ("),
    (["check", "raises_on_import:f", "--shape", "3"],
     "importing module 'raises_on_import' raised RuntimeError: no GPU here (/"),
    (["check", "userops:product", "--shape", "3", "--dtype="],
     "argument --dtype: give at least one dtype, such as float64"),
    (["check", "userops:product", "--shape", "3", "--seed", "-1"],
     "argument --seed: a seed is an integer >= 0, got '-1'"),
    (["check", "userops:product", "--shape", "3", "--seed", "one"],
     "argument --seed: a seed is an integer >= 0, got 'one'"),
])
def test_usage_errors_exit_2_with_a_clear_message(module_dir, args, message):
    result = gradcheck_cli(*args, cwd=module_dir)
    assert result.returncode == 2
    assert message in result.stderr
    assert "Traceback" not in result.stderr


def test_help_explains_every_option(module_dir):
    result = gradcheck_cli("check", "--help", cwd=module_dir)
    assert result.returncode == 0
    for option in ("--shape", "--dtype", "--modes", "--devices", "--order", "--seed", "--strict"):
        assert option in result.stdout
    assert "MODULE:FUNCTION" in gradcheck_cli("--help", cwd=module_dir).stdout
