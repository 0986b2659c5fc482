"""A check turns NumPy's huge-page requests off while it runs, where the kernel
would stall on them, and puts the user's setting back whatever the outcome."""
import threading

import numpy as np
import pytest
import tensorflow as tf

from gradcheck import GradientCheckError, check_gradients
from gradcheck.numerics import memory

TOGGLE = memory._huge_page_toggle()
pytestmark = pytest.mark.skipif(TOGGLE is None, reason="this NumPy has no huge-page switch")


def _current():
    previous = TOGGLE(False)
    TOGGLE(previous)
    return bool(previous)


@tf.custom_gradient
def _wrong_sine(x):
    return tf.sin(x), lambda dy: dy * 2.0 * tf.cos(x)


@pytest.mark.parametrize("users_setting", [True, False])
@pytest.mark.parametrize("fn", [tf.sin, _wrong_sine], ids=["passing", "failing"])
def test_a_check_puts_numpys_huge_page_setting_back(users_setting, fn):
    seen = []

    def watched(x):
        seen.append(_current())
        return fn(x)

    TOGGLE(users_setting)
    try:
        try:
            check_gradients(watched, [np.linspace(0.1, 1.0, 5)], modes=["eager"])
        except GradientCheckError:
            assert fn is _wrong_sine
        assert _current() == users_setting
    finally:
        TOGGLE(True)
    assert seen and set(seen) == {users_setting and not memory._requests_stall()}


def test_checks_overlapping_in_threads_put_the_setting_back_when_the_last_ends(monkeypatch):
    monkeypatch.setattr(memory, "_requests_stall", lambda: True)
    first_in, second_in, first_out = threading.Event(), threading.Event(), threading.Event()
    seen = {}

    def first():
        with memory.ordinary_pages():
            first_in.set()
            second_in.wait()
        first_out.set()

    def second():
        first_in.wait()
        with memory.ordinary_pages():
            second_in.set()
            first_out.wait()
            seen["after the first ended"] = _current()

    TOGGLE(True)
    try:
        threads = [threading.Thread(target=first), threading.Thread(target=second)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert seen == {"after the first ended": False}
        assert _current() is True
    finally:
        TOGGLE(True)
