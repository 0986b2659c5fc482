"""Check one corpus op: Hypothesis draws its arguments in each of its dtypes,
check_gradients checks every mode it supports."""
import dataclasses
import os

from hypothesis import Phase, given, reject, settings

from gradcheck import GradientCheckError, check_gradients
from gradcheck.testing.property_tests import reproduction

# Examples per (op, dtype). The first example of each traces every mode, which
# is most of the cost; raise it for a thorough run.
EXAMPLES = int(os.environ.get("GRADCHECK_CORPUS_EXAMPLES", "2"))
# "quick": every mode in the op's widest dtype, the function mode in the others.
# "full": every mode in every dtype.
MATRIX = os.environ.get("GRADCHECK_CORPUS", "quick")


class ModeNotRun(AssertionError):
    """The op did not run in a mode the corpus says it supports."""


def modes_for(op, dtype, matrix=MATRIX):
    """The modes `op` is checked in, in `dtype`."""
    if matrix == "full" or dtype == op.dtypes[-1] or "function" not in op.modes:
        return op.modes
    return ("function",)


def check_example(op, values, modes):
    """Check `op` on one drawn argument list in `modes`; raise on a failure."""
    report = check_gradients(op.fn, values, modes=list(modes), raise_on_failure=False)
    if not report.ok:
        raise GradientCheckError(report, reproduction(op.fn, values, {"modes": list(modes)}))
    if report.kink_fraction > 0.5:
        reject()  # passing, but on kinks the gradient only has to lie in a range
    not_run = [f"{m.mode} ({m.reason})" for m in report.modes if m.status != "checked"]
    if not_run:
        raise ModeNotRun(f"{op.name} did not run in " + "; ".join(not_run)
                         + ": fix its modes in tests/corpus/ops.py")
    return report


def check_dtype(op, dtype, examples=EXAMPLES, reports=None, matrix=MATRIX):
    """Run `examples` Hypothesis examples of `op` in `dtype`; a failure shrinks and
    raises (a known TensorFlow defect is not shrunk: one failing example shows it)."""
    reports = [] if reports is None else reports
    modes = modes_for(op, dtype, matrix)
    phases = [Phase.explicit, Phase.generate] if op.defect else settings.default.phases

    @settings(settings.default, max_examples=examples, deadline=None, phases=phases)
    @given(op.arguments(dtype))
    def run(values):
        reports.append(check_example(op, values, modes))

    run()
    return reports


@dataclasses.dataclass
class Row:
    examples: int = 0
    worst_ratio: float = 0.0
    worst_dtype: str = ""
    verdict: str = "ok"

    @property
    def ok(self):
        return self.verdict == "ok"


def run_op(op, examples=EXAMPLES, matrix=MATRIX):
    """One table row: every dtype of `op`, with the worst error relative to its tolerance."""
    row = Row()
    for dtype in op.dtypes:
        reports = []
        try:
            check_dtype(op, dtype, examples, reports, matrix)
        except (GradientCheckError, AssertionError) as failure:
            row.verdict = f"FAIL in {dtype}: {str(failure).splitlines()[0]}"
        row.examples += len(reports)
        for report in reports:
            for pair in report.pairs:
                if pair.decisive and pair.error_ratio > row.worst_ratio:
                    row.worst_ratio, row.worst_dtype = pair.error_ratio, dtype
    return row
