"""Every bug in the zoo (tests/bugzoo/zoo.py) is detected by full and by fast
mode, blamed on the right input (and element, and modes, where the entry says),
and the corrected gradients pass.

Where gradcheck falls short, the test is a strict xfail whose reason says what
happens instead (details in the findings that came with this zoo)."""
import collections

import pytest

from tests.bugzoo import expect, zoo

pytestmark = [pytest.mark.bugzoo, pytest.mark.slow]

MISSES = "gradcheck misses this: "
KNOWN_MISSES = {}
KNOWN_FALSE_ALARMS = {}


def entries(method):
    params = []
    for bug in zoo.ZOO:
        reason = KNOWN_MISSES.get((bug.name, method))
        marks = [pytest.mark.xfail(strict=True, reason=MISSES + reason)] if reason else []
        params.append(pytest.param(bug, id=bug.name, marks=marks))
    return params


@pytest.mark.parametrize("bug", entries("full"))
def test_full_mode_detects_the_bug_and_blames_the_right_input(bug):
    report = expect.run(bug, "full")
    assert report.method == "full"
    assert expect.problems(bug, report) == [], str(report)


@pytest.mark.parametrize("bug", entries("fast"))
def test_fast_mode_detects_the_bug_and_blames_the_right_input(bug):
    report = expect.run(bug, "fast")
    assert report.method == "fast"
    assert all(p.projections for p in expect.against_finite_differences(report))
    assert expect.problems(bug, report) == [], str(report)


def fixed_entries():
    params = []
    for bug in zoo.ZOO:
        if bug.fixed is None and bug.fixed_options is None:
            continue
        reason = KNOWN_FALSE_ALARMS.get(bug.name)
        marks = [pytest.mark.xfail(strict=True, reason="gradcheck wrongly fails this: " + reason)
                 ] if reason else []
        params.append(pytest.param(bug, id=bug.name, marks=marks))
    return params


@pytest.mark.parametrize("method", ["full", "fast"])
@pytest.mark.parametrize("bug", fixed_entries())
def test_the_corrected_gradient_passes(bug, method):
    report = expect.run(bug, method, fn=bug.fixed, options=bug.fixed_options)
    assert report.ok, report.failure_message()
    assert expect.checked_modes(report, expect.order_of(bug)), str(report)


@pytest.mark.parametrize("bug", [pytest.param(b, id=b.name) for b in zoo.ZOO
                                 if b.control_inputs is not None])
def test_the_bug_is_specific_to_its_dtype_or_shape(bug):
    """The same wrong code at inputs of another dtype or shape is right, and passes."""
    report = expect.run(bug, "full", inputs=bug.control_inputs)
    assert report.ok, report.failure_message()


def test_the_zoo_covers_every_source_and_kind():
    assert len(zoo.ZOO) >= 30
    by_source = collections.Counter(b.source for b in zoo.ZOO)
    assert set(by_source) == set(zoo.SOURCES)
    assert by_source[zoo.CPP] >= 4
    assert min(by_source.values()) >= 3
    assert {b.kind for b in zoo.ZOO} == set(zoo.KINDS)
    fixed_sources = {b.source for b in zoo.ZOO if b.fixed is not None or b.fixed_options is not None}
    assert fixed_sources == set(zoo.SOURCES)


def test_override_map_entries_are_checked_in_graph_mode_only():
    """GradientTape ignores gradient_override_map: the tape modes must say so."""
    bug = zoo.BY_NAME["override_square_forgets_the_two"]
    report = expect.run(bug, "full")
    assert expect.checked_modes(report, 1) == {"graph"}
    assert {m.mode for m in report.skipped_modes if "not applicable" in m.reason} == {
        "eager", "function", "xla"}

