"""What a scan found: one result per gradient, as a table and as JSON rows."""
import dataclasses

RIGHT, WRONG, NO_INPUTS, NOT_DIFFERENTIABLE = (
    "right", "wrong", "no valid inputs", "not differentiable")


@dataclasses.dataclass(frozen=True)
class ScanResult:
    name: str  # the op type, or the function's name in the target
    status: str  # RIGHT, WRONG, NO_INPUTS or NOT_DIFFERENTIABLE
    origin: str  # where the gradient (or the op) comes from
    detail: str = ""  # the inputs checked, the first finding, or what was tried
    report: object = None  # the GradientReport of the failing example, for WRONG
    reproduction: str = ""  # a check_gradients(...) call, for WRONG
    examples: tuple = ()  # the op_inputs.Example checked (the last one failed, for WRONG)
    reports: tuple = ()  # their GradientReports, for the pytest session's summary
    kind: str = "op"  # "op", "tf.custom_gradient" or "Defun"

    def row(self):
        return {"name": self.name, "kind": self.kind, "status": self.status, "origin": self.origin,
                "detail": self.detail, "reproduction": self.reproduction}


@dataclasses.dataclass(frozen=True)
class ScanReport:
    target: str
    results: tuple
    override_only: tuple = ()  # gradients under names no op has
    unreachable: tuple = ()  # gradients of ops no module-level name reaches
    strict: bool = False  # NO_INPUTS counts as a failure

    @property
    def ok(self):
        bad = {WRONG, NO_INPUTS} if self.strict else {WRONG}
        return not any(r.status in bad for r in self.results)

    def counts(self):
        counts = {}
        for result in self.results:
            counts[result.status] = counts.get(result.status, 0) + 1
        return counts

    def rows(self):
        return [r.row() for r in self.results]

    def __str__(self):
        counts = ", ".join(f"{n} {status}" for status, n in self.counts().items()) or "nothing found"
        lines = [f"gradcheck scan of {self.target}: {'OK' if self.ok else 'FAILED'} ({counts})",
                 _table(self.results)]
        if self.override_only:
            lines.append(f"not scanned: {', '.join(self.override_only)}: registered under names "
                         "no op has (gradients for gradient_override_map); check them with "
                         "check_gradients(..., override_map=...).")
        if self.unreachable:
            lines.append(f"not scanned: {', '.join(self.unreachable)}: gradients of ops that exist, "
                         "but no module-level name of the package holds the op library that "
                         "defines them (loaded inside a function?). Keep tf.load_op_library's "
                         "module in a module-level name, or scan the .so.")
        for result in self.results:
            if result.status == WRONG:
                lines += ["", f"{result.name}: {result.report.failure_message()}",
                          result.reproduction]
        return "\n".join(lines)


def _table(results):
    if not results:
        return "(no gradient was found)"
    rows = [("gradient", "result", "inputs or reason")] + [
        (r.name, r.status, r.detail.splitlines()[0] if r.detail else "") for r in results]
    widths = [max(len(row[c]) for row in rows) for c in range(2)]
    return "\n".join(f"{row[0].ljust(widths[0])}  {row[1].ljust(widths[1])}  {row[2]}".rstrip()
                     for row in rows)
