"""Running a zoo entry and judging gradcheck's report against the entry's
expectations; shared by test_bugzoo.py and table.py."""
from gradcheck import check_gradients
from gradcheck.report import FINITE_DIFFERENCES


def run(bug, method, inputs=None, fn=None, options=None):
    """check_gradients on the entry (or on `fn` / `inputs` / `options` instead)."""
    return check_gradients(fn or bug.fn, list(bug.inputs if inputs is None else inputs),
                           method=method, raise_on_failure=False,
                           **(bug.options if options is None else options))


def against_finite_differences(report):
    return [p for p in report.failed_pairs if p.against == FINITE_DIFFERENCES]


def order_of(bug):
    return bug.options.get("order", 1)


def checked_modes(report, order):
    return {m.mode for m in report.modes if m.status == "checked" and m.order == order}


def problems(bug, report):
    """How the report falls short of detecting `bug` as the entry says (empty: it
    detects it, names the right input, element, modes and order).

    A gradient that raises (say, for the wrong shape) is a detection too, when
    the message names the input."""
    if report.ok:
        return ["the report is OK: the bug is missed"]
    found = []
    for mode in report.failed_modes:
        if f"'{bug.wrong_input}'" not in mode.reason:
            found.append(f"the gradient raised in {mode.where} without naming {bug.wrong_input!r}: "
                         f"{mode.reason}")
    failed = against_finite_differences(report)
    if not failed and not report.failed_modes:
        found.append("no Jacobian block differs from finite differences")
        return found
    inputs = sorted({p.input for p in failed})
    if failed and inputs != [bug.wrong_input]:
        found.append(f"blames input(s) {inputs}, not {bug.wrong_input!r}")
    if bug.wrong_elements is not None:
        outside = sorted({p.worst_input for p in failed if p.input == bug.wrong_input}
                         - bug.wrong_elements)
        if outside:
            found.append(f"names element(s) {outside}, outside {sorted(bug.wrong_elements)}")
    order = order_of(bug)
    orders = sorted({p.order for p in failed} | {m.order for m in report.failed_modes})
    if orders != [order]:
        found.append(f"fails at order(s) {orders}, expected order {order} only")
    modes = {p.mode for p in failed} | {m.mode for m in report.failed_modes}
    checked = checked_modes(report, order) | {m.mode for m in report.failed_modes if m.order == order}
    expected = set(bug.wrong_modes) if bug.wrong_modes is not None else checked
    if not expected <= checked:
        found.append(f"modes {sorted(expected - checked)} were not checked")
    if modes != expected:
        found.append(f"fails in modes {sorted(modes)}, expected {sorted(expected)}")
    return found


def first_line(report):
    return report.failure_message().splitlines()[0] if not report.ok else str(report).splitlines()[0]


def named(report, bug):
    """'input element' as the first failing pair names them, for the table."""
    failed = against_finite_differences(report)
    if not failed:
        return "-"
    pair = next((p for p in failed if p.input == bug.wrong_input), failed[0])
    return f"{pair.input} {pair.worst_input}"
