"""The progress display of a long check: on stderr when asked or on a terminal
outside pytest, never otherwise."""
import fcntl
import os
import pty
import struct
import subprocess
import sys
import termios
import textwrap

import numpy as np
import pytest
import tensorflow as tf

from gradcheck import check_gradients, progress
from tests.test_cli import GRADCHECK_ROOT

SCRIPT = """
import numpy as np
import tensorflow as tf
from gradcheck import check_gradients

def spread(x):
    return tf.sin(x) * tf.reduce_sum(x)

check_gradients(spread, [np.linspace(-1.0, 1.0, 12)], modes=["eager", "graph"])
"""
BAR = "gradcheck spread: 12/12 columns"


def environment(cwd, **extra):
    # The inherited PYTHONPATH last: where tqdm may be, in a development setup.
    path = [str(cwd), GRADCHECK_ROOT] + os.environ.get("PYTHONPATH", "").split(os.pathsep)
    env = {"PYTHONPATH": os.pathsep.join(p for p in path if p), "TF_CPP_MIN_LOG_LEVEL": "2",
           "PATH": "/usr/bin:/bin", "GRADCHECK_PROGRESS_DELAY": "0"}
    env.update(extra)
    return env


def on_a_terminal(args, cwd, env):
    """(exit status, what was written to stderr, a pseudo-terminal)."""
    leader, follower = pty.openpty()
    # Rows and columns, as a terminal has (a new pseudo-terminal has none).
    fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 100, 0, 0))
    with subprocess.Popen(args, cwd=cwd, env=env, stdout=subprocess.DEVNULL,
                          stderr=follower) as process:
        os.close(follower)
        written = b""
        while True:
            try:
                chunk = os.read(leader, 4096)
            except OSError:  # the terminal's other end closed
                break
            if not chunk:
                break
            written += chunk
        status = process.wait(timeout=300)
    os.close(leader)
    return status, written.decode(errors="replace")


def run_piped(args, cwd, env):
    return subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True, timeout=300)


def spread(x):
    return tf.sin(x) * tf.reduce_sum(x)


def test_asked_for_a_check_shows_columns_and_modes_on_stderr(monkeypatch, capfd):
    pytest.importorskip("tqdm")
    monkeypatch.setenv("GRADCHECK_PROGRESS", "1")
    monkeypatch.setenv("GRADCHECK_PROGRESS_DELAY", "0")
    check_gradients(spread, [np.linspace(-1.0, 1.0, 12)], modes=["eager", "graph"])
    err = capfd.readouterr().err
    assert BAR in err and "modes 2/2" in err
    assert progress.current() is None  # removed when the check ended


def test_fast_mode_shows_its_projections(monkeypatch, capfd):
    pytest.importorskip("tqdm")
    monkeypatch.setenv("GRADCHECK_PROGRESS", "1")
    monkeypatch.setenv("GRADCHECK_PROGRESS_DELAY", "0")
    check_gradients(spread, [np.linspace(-1.0, 1.0, 12)], modes=["eager"], method="fast")
    assert "gradcheck spread: 8/8 projections" in capfd.readouterr().err


def test_a_failing_check_clears_its_display(monkeypatch, capfd):
    pytest.importorskip("tqdm")
    monkeypatch.setenv("GRADCHECK_PROGRESS", "1")
    monkeypatch.setenv("GRADCHECK_PROGRESS_DELAY", "0")

    @tf.custom_gradient
    def wrong(x):
        return x * x, lambda dy: dy * x

    with pytest.raises(AssertionError):
        check_gradients(wrong, [np.ones(3)], modes=["eager"])
    err = capfd.readouterr().err
    assert "gradcheck wrong:" in err and err.endswith("\r")  # tqdm's clearing of the line
    assert progress.current() is None


def test_under_pytest_a_check_prints_nothing_by_default(capfd):
    check_gradients(spread, [np.linspace(-1.0, 1.0, 12)], modes=["eager"])
    assert capfd.readouterr().err == ""


@pytest.mark.slow
def test_the_command_line_shows_progress_when_asked(tmp_path):
    (tmp_path / "userops.py").write_text("import tensorflow as tf\n\n"
                                         "def spread(x):\n    return tf.sin(x) * tf.reduce_sum(x)\n")
    result = run_piped([sys.executable, "-m", "gradcheck", "check", "userops:spread",
                        "--shape", "12", "--modes", "eager,graph"], tmp_path,
                       environment(tmp_path, GRADCHECK_PROGRESS="1"))
    assert result.returncode == 0, result.stderr
    assert "[1/1] checking userops:spread in float64" in result.stderr
    assert BAR in result.stderr and "modes 2/2" in result.stderr
    assert BAR not in result.stdout


@pytest.mark.slow
def test_outside_pytest_a_terminal_shows_progress_and_a_pipe_does_not(tmp_path):
    (tmp_path / "script.py").write_text(SCRIPT)
    args = [sys.executable, "script.py"]
    status, written = on_a_terminal(args, tmp_path, environment(tmp_path))
    assert status == 0 and BAR in written
    piped = run_piped(args, tmp_path, environment(tmp_path))
    assert piped.returncode == 0 and "gradcheck spread" not in piped.stderr


@pytest.mark.slow
@pytest.mark.parametrize("asked", [None, "1"])
def test_under_pytest_progress_shows_only_when_asked(tmp_path, asked):
    (tmp_path / "test_spread.py").write_text("def test_spread():\n" + textwrap.indent(SCRIPT, "    "))
    extra = {} if asked is None else {"GRADCHECK_PROGRESS": asked}
    # -s and a terminal: only the rule for pytest keeps the display off.
    status, written = on_a_terminal([sys.executable, "-m", "pytest", "-s", "-p", "no:cacheprovider",
                                     "test_spread.py"], tmp_path, environment(tmp_path, **extra))
    assert status == 0, written
    assert (BAR in written) == (asked is not None)


def test_ctrl_c_clears_the_display_and_the_next_check_shows_its_own(monkeypatch, capfd):
    pytest.importorskip("tqdm")
    monkeypatch.setenv("GRADCHECK_PROGRESS", "1")
    monkeypatch.setenv("GRADCHECK_PROGRESS_DELAY", "0")

    def interrupted(x):
        reporter = progress.current()
        if reporter is not None and reporter.counts.get(progress.MODES):  # the bar is up
            raise KeyboardInterrupt
        return tf.sin(x)

    with pytest.raises(KeyboardInterrupt):
        check_gradients(interrupted, [np.ones(3)], modes=["eager"])
    err = capfd.readouterr().err
    assert "gradcheck interrupted: 0/1 modes" in err and err.endswith("\r")
    assert progress.current() is None
    check_gradients(spread, [np.linspace(-1.0, 1.0, 12)], modes=["eager"])
    assert BAR in capfd.readouterr().err
