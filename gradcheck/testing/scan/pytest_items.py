"""--gradcheck-scan=TARGET: one pytest item per op the scan checks, so that its
findings reach the session summary, the JSON report, JUnit and the coverage gate."""
import pytest

from gradcheck.errors import OptionError
from gradcheck.testing.scan.results import NO_INPUTS, NOT_DIFFERENTIABLE, WRONG


class ScanFailure(Exception):
    """A gradient the scan found wrong; its text is the item's failure."""


def scan_items(session, target, log, options):
    """The items of every op `target` defines, in op type order (pytest-xdist
    workers must collect the same items)."""
    from gradcheck.testing.scan.scanner import scan_targets

    try:
        found, hints = scan_targets(target)
    except OptionError as error:
        raise pytest.UsageError(f"--gradcheck-scan: {error}") from None
    return [ScanItem.from_parent(session, name=f"gradcheck-scan[{op.name}]", op=op,
                                 hint=hints.get(op.name), log=log, options=options)
            for op in found.ops]


class ScanItem(pytest.Item):
    def __init__(self, *, op, hint, log, options, **kwargs):
        super().__init__(**kwargs)
        self.op, self.hint, self.log = op, hint, log
        self.strict = bool(options.get("strict"))
        self.options = {k: v for k, v in options.items() if k != "strict"}

    def runtest(self):
        from gradcheck.testing.scan.hints import NO_HINT
        from gradcheck.testing.scan.scanner import scan_op

        result = scan_op(self.op, self.hint or NO_HINT, **self.options)
        for report in result.reports:
            self.log.add(report, self.nodeid)
        self.user_properties.append(("gradcheck scan", f"{result.name}: {result.status}"))
        if result.status == WRONG:
            raise ScanFailure(f"{result.report.failure_message()}\n\n{result.reproduction}")
        if result.status == NO_INPUTS:
            if self.strict:
                pytest.fail(f"strict: the scan found no valid inputs for {result.name}: "
                            f"{result.detail}", pytrace=False)
            pytest.skip(f"no valid inputs: {result.detail}")
        if result.status == NOT_DIFFERENTIABLE:
            pytest.skip(f"not differentiable: {result.detail}")

    def repr_failure(self, excinfo):
        if isinstance(excinfo.value, ScanFailure):
            return str(excinfo.value)
        return super().repr_failure(excinfo)

    def reportinfo(self):
        return self.path, None, f"gradcheck scan of {self.op.name} ({self.op.origin})"
