"""What a check found: one row per compared Jacobian block, one per mode run."""
import dataclasses
import math

from gradcheck.numerics.compare import outside_interval

FINITE_DIFFERENCES = "finite differences"
DECLARED = "declared reference"
NO_GRADIENT = "None (declared)"  # no_gradient_for=: the gradient must be None


@dataclasses.dataclass
class PairResult:
    """One (output, input) Jacobian block in one device and mode, against one reference."""

    device: str
    mode: str
    order: int
    output: str
    input: str
    against: str  # FINITE_DIFFERENCES, or "<mode> on <device>"
    dtype: str  # the gradient's dtype, which sets the tolerance
    output_shape: tuple
    input_shape: tuple
    atol: float
    rtol: float
    n_total: int
    n_failed: int
    n_unreliable: int
    max_abs_error: float
    max_rel_error: float
    worst_output: str  # 'output[1, 2]'
    worst_input: str  # 'x[0, 3]'
    worst_actual: float
    worst_expected: float
    n_kinks: int = 0  # entries on a kink or step, judged against the one-sided differences
    reference_uncertainty: float = 0.0  # finite differences' own error bound, worst entry
    worst_bounds: tuple = None  # (least, greatest) one-sided difference, if on a kink
    gradient_is_none: bool = False  # TensorFlow returned None; compared as zeros
    decisive: bool = True  # False: shown for information (finite differences, when a
    # reference is declared), not part of the verdict
    projections: bool = False  # fast mode: n_total counts random projections u^T J v
    left_out: int = 0  # fast mode: input components judged on their own (localise.py)
    unresolved: str = ""  # fast mode: why localisation gave up, if it did
    n_inconclusive: int = 0  # entries the reference is too uncertain to judge
    undecided: bool = False  # entries were unchecked, and no other could have been wrong
    first_unchecked: str = ""  # 'd output[0] / d x[0]': the first entry left unchecked
    arrays: tuple = dataclasses.field(default=None, repr=False, compare=False)
    # (gradient, reference) Jacobian blocks, kept for failed pairs only (heatmaps)

    @property
    def ok(self):
        """Whether the two Jacobians agree (for a decisive pair: whether it passes)."""
        return self.n_failed == 0 and self.n_inconclusive == 0 and not self.undecided

    @property
    def allowed(self):
        """The error the worst element is allowed."""
        return self.atol + self.rtol * self._magnitude + self.reference_uncertainty

    @property
    def _magnitude(self):
        if self.worst_bounds:
            return max(abs(self.worst_bounds[0]), abs(self.worst_bounds[1]))
        return abs(self.worst_expected)

    @property
    def _worst_error(self):
        """The worst entry's error: on a kink, how far it lies outside the bounds."""
        if self.worst_bounds:
            return float(outside_interval(self.worst_actual, *self.worst_bounds))
        return abs(self.worst_actual - self.worst_expected)

    @property
    def error_ratio(self):
        """The worst element's error as a multiple of what it is allowed (> 1 fails)."""
        if self.n_total == 0:
            return 0.0
        if self.against == NO_GRADIENT:
            return 0.0 if self.ok else math.inf
        return self._worst_error / self.allowed

    @property
    def verdict(self):
        if self.decisive:
            return "ok" if self.ok else "FAIL" if self.n_failed else "UNDECIDED"
        return "agrees" if self.ok else "differs"

    @property
    def tally(self):
        """'0/9', with the entries that could not be judged, if any."""
        tally = f"{self.n_failed}/{self.n_total}"
        if self.n_inconclusive:
            tally += f" ({self.n_inconclusive} inconclusive)"
        if self.n_unreliable:
            tally += f" ({self.n_unreliable} unchecked)"
        return tally

    @property
    def where(self):
        order = "" if self.order == 1 else f", order {self.order}"
        return f"{self.mode} mode on {self.device}{order}"

    @property
    def finding(self):
        """What identifies the same wrong gradient seen in several modes. A NaN
        stands for itself, so that the same NaN in two modes is one finding."""
        actual = "nan" if math.isnan(self.worst_actual) else self.worst_actual
        return (self.output, self.input, self.against, self.order, self.n_failed,
                self.worst_output, self.worst_input, actual)

    def headline(self, where=None):
        where = where or self.where
        reference = "finite differences" if self.against == FINITE_DIFFERENCES else self.against
        if self.against == NO_GRADIENT:
            return self._declared_none_headline(where)
        if self.undecided:
            return (
                f"Nothing of d {self.output} / d {self.input} could be checked in {where}: "
                f"the finite differences are not finite at {self.n_unreliable} of "
                f"{self.n_total} entries (first: {self.first_unchecked}), and every other entry "
                "is zero in both. Check that the inputs lie inside the function's domain, away "
                "from its edges." + (self._declare_none_hint() if self.gradient_is_none else "")
            )
        if self.n_inconclusive and not self.n_failed:
            return (
                f"{self.n_inconclusive} of {self.n_total} entries of d {self.output} / "
                f"d {self.input} could not be judged in {where}: the finite differences' own "
                "uncertainty there is larger than the error a gradient is allowed, so they "
                "cannot tell a right gradient from a wrong one."
            )
        if self.gradient_is_none:
            return (
                f"TensorFlow gives no gradient (None) for {self.input} in {where}, but "
                f"{self.output} depends on it: {reference} give d {self.worst_output} / "
                f"d {self.worst_input} = {self.worst_expected:.6g}. The op may have no gradient "
                "(tf.no_gradient), be cut by tf.stop_gradient, or be a function.Defun "
                "under a GradientTape." + self._declare_none_hint()
            )
        if self.projections:
            return self._projection_headline(where)
        uncertainty = (f" + the finite differences' uncertainty {self.reference_uncertainty:.2g}"
                       if self.reference_uncertainty else "")
        lead = (f"The gradient of {self.output} with respect to {self.input} is wrong in "
                f"{where}: {self.n_failed} of {self.n_total} Jacobian entries differ from "
                f"{reference}. Worst: d {self.worst_output} / d {self.worst_input} is "
                f"{self.worst_actual:.6g}, ")
        if self.worst_bounds:
            low, high = self.worst_bounds
            return lead + (
                f"at a kink or step where the one-sided differences run from {low:.6g} to "
                f"{high:.6g}, and a gradient must lie between them (outside by "
                f"{self._worst_error:.3g}, allowed {self.allowed:.3g} = atol {self.atol:g} + "
                f"rtol {self.rtol:g} * {self._magnitude:.3g}{uncertainty})."
            )
        return lead + (
            f"{reference} give {self.worst_expected:.6g} "
            f"(error {abs(self.worst_actual - self.worst_expected):.3g}, allowed {self.allowed:.3g} "
            f"= atol {self.atol:g} + rtol {self.rtol:g} * |reference|{uncertainty})."
        )

    def _declare_none_hint(self):
        return (f" If {self.input} is meant to get no gradient (the order of a special function, "
                f"an index), declare it: no_gradient_for=['{self.input}'].")

    def _declared_none_headline(self, where):
        if self.unresolved:
            return (f"no_gradient_for= declares the gradient with respect to {self.input} None, "
                    f"but taking it raised in {where}: {self.unresolved}")
        return (f"TensorFlow gives a gradient for {self.input} in {where}, but no_gradient_for= "
                f"declares it None: its largest entry is {self.worst_actual:.6g} (a gradient of "
                "zeros is still a gradient). If the gradient is meant, check it: leave "
                f"{self.input} out of no_gradient_for=; else make the gradient function return "
                f"None for {self.input}.")

    def _projection_headline(self, where):
        if self.unresolved:
            return (f"Fast mode could not judge the gradient with respect to {self.input} in "
                    f"{where}: {self.n_failed} of {self.n_total} random projections u^T J v "
                    f"differ from finite differences, but {self.unresolved} (last: "
                    f"{self.worst_input}). Check this input with method=\"full\", which judges "
                    "every element on its own, or move the inputs away from kinks.")
        located = ""
        if self.worst_output != "(projection)":
            located = (f" Bisection found d {self.worst_output} / d {self.worst_input} = "
                       f"{self.worst_actual:.6g} ")
            if self.worst_bounds:
                low, high = self.worst_bounds
                located += (f"at a kink or step, where the one-sided differences run from "
                            f"{low:.6g} to {high:.6g} and a gradient must lie between them.")
            else:
                located += f"where finite differences give {self.worst_expected:.6g}."
        return (f"The gradient with respect to {self.input} is wrong in {where}: {self.n_failed} of "
                f"{self.n_total} random projections u^T J v differ from finite differences.{located}")


@dataclasses.dataclass(frozen=True)
class ModeResult:
    """Whether a device and mode could be checked at all."""

    device: str
    mode: str
    order: int
    status: str  # "checked", "skipped" (cannot run here), "failed" (the gradient raised)
    reason: str = ""
    obtained: str = ""  # for a checked mode: which gradient it got, in words
    placed: str = ""  # for a checked mode: where its ops ran, 'ran on CPU:1 (9 ops ...)'

    @property
    def where(self):
        order = "" if self.order == 1 else f", order {self.order}"
        return f"{self.mode} mode on {self.device}{order}"


@dataclasses.dataclass(frozen=True)
class GradientReport:
    function: str
    inputs: list  # 'x: float32 (3, 4)'
    method: str
    seed: int
    reference_precision: str = ""
    strict: bool = False  # modes that cannot run count as failures
    eps: float = None  # the finite differences' step, if the user chose it
    unused_overrides: tuple = ()  # override_map op types the function never creates
    source: str = ""  # built-in, custom_gradient, registered gradient, Defun, override map
    gradients_used: list = dataclasses.field(default_factory=list)
    kinked_elements: int = 0  # real input components on a kink or step (order 1)
    checked_elements: int = 0
    pairs: list = dataclasses.field(default_factory=list)
    modes: list = dataclasses.field(default_factory=list)
    notes: list = dataclasses.field(default_factory=list)

    @property
    def ok(self):
        return (not self.failed_pairs
                and not any(m.status == "failed" for m in self.modes)
                and not (self.strict and (self.skipped_modes or self.unused_overrides))
                and any(m.status == "checked" for m in self.modes))

    @property
    def failed_pairs(self):
        return sorted((p for p in self.pairs if p.decisive and not p.ok), key=_failure_rank)

    @property
    def kink_fraction(self):
        """Share of the input components whose finite differences sit on a kink."""
        return self.kinked_elements / self.checked_elements if self.checked_elements else 0.0

    def obtained_by_mode(self):
        """{(device, mode, order): which gradient that mode got}, for checked modes."""
        return {(m.device, m.mode, m.order): m.obtained for m in self.modes
                if m.status == "checked" and m.obtained}

    def disagreement(self):
        """'graph mode on CPU:0 gets X; function mode on CPU:0 gets Y', or '' if the modes agree."""
        groups = {}
        for (device, mode, order), obtained in self.obtained_by_mode().items():
            groups.setdefault((order, obtained), []).append((device, mode))
        if len({order for order, _ in groups}) != 1 or len(groups) < 2:
            return ""
        return "The modes disagree: " + "; ".join(
            f"{_places(places)} {'gets' if len(places) == 1 else 'get'} {obtained}"
            for (_, obtained), places in groups.items()) + "."

    @property
    def failed_modes(self):
        return [m for m in self.modes if m.status == "failed"]

    @property
    def skipped_modes(self):
        return [m for m in self.modes if m.status == "skipped"]

    def reproduction(self):
        return (f"reproduce: {self.function!r} with inputs {', '.join(self.inputs)}; "
                f"seed={self.seed}, method={self.method!r}")

    def failure_message(self):
        lines = [self.disagreement()] if self.disagreement() else []
        for mode in self.failed_modes:
            lines.append(f"The gradient raised in {mode.where}: {mode.reason}")
        if self.strict:
            lines += [f"strict: {mode.where} could not be checked: {mode.reason}"
                      for mode in self.skipped_modes]
            if self.unused_overrides:
                lines.append(f"strict: override_map names {', '.join(self.unused_overrides)}, "
                             "an op type the function never creates.")
        lines += _grouped_headlines(self.failed_pairs)[:3]
        if not any(m.status == "checked" for m in self.modes) and not lines:
            lines.append("No mode could run the check: "
                         + "; ".join(f"{m.mode}: {m.reason}" for m in self.skipped_modes))
        if any(p.n_inconclusive for p in self.failed_pairs):
            lines.append(self._step_advice())
        if self.failed_pairs and all(p.against == FINITE_DIFFERENCES and not p.unresolved
                                     and not p.n_inconclusive and not p.undecided
                                     for p in self.failed_pairs):
            lines.append("If the gradient differs from the derivative on purpose "
                         "(tf.stop_gradient, a straight-through estimator), declare "
                         "the intended gradient with reference=.")
        lines.append(self.reproduction())
        return "\n".join(lines) + "\n\n" + str(self)

    def _step_advice(self):
        if self.eps is not None:
            return (f"The step eps={self.eps:g} leaves the finite differences too uncertain to "
                    "judge: rounding errors grow as the step shrinks, curvature errors as it "
                    "grows. Leave eps at its default (None), which picks a step per element.")
        return ("The finite differences stay too uncertain at every step gradcheck tries: the "
                "function may be noisy or barely differentiable here. Try other inputs, a "
                "larger eps=, or declare the gradient with reference=.")

    def __str__(self):
        header = (f"gradcheck of {self.function!r} ({', '.join(self.inputs)}): "
                  f"{'OK' if self.ok else 'FAILED'}; method {self.method}, "
                  f"reference {self.reference_precision}")
        return "\n".join([header, format_table(self.pairs)] + _mode_lines(self.modes)
                         + _placement_lines(self.modes) + [f"note: {n}" for n in self.notes])


class Findings:
    """What a check finds as it runs; `report()` freezes it into a GradientReport."""

    def __init__(self):
        self.pairs, self.modes, self.notes = [], [], []
        self.kinked_elements = self.checked_elements = 0  # real input components, order 1

    def note(self, text, once=False):
        if not (once and text in self.notes):
            self.notes.append(text)

    def mode(self, device, mode, order, status, reason="", placed=""):
        result = ModeResult(device, mode, order, status, reason, placed=placed)
        self.modes.append(result)
        return result

    def obtained(self, result, words):
        """Say which gradient a checked mode got, once its comparisons are made."""
        position = next(n for n, m in enumerate(self.modes) if m is result)
        self.modes[position] = dataclasses.replace(result, obtained=words)

    def report(self, **facts):
        return GradientReport(pairs=self.pairs, modes=self.modes, notes=self.notes,
                              kinked_elements=self.kinked_elements,
                              checked_elements=self.checked_elements, **facts)


def _places(device_modes):
    """[(CPU:0, eager), (CPU:0, graph)] -> 'eager, graph modes on CPU:0'."""
    by_device = {}
    for device, mode in device_modes:
        by_device.setdefault(device, []).append(mode)
    return "; ".join(f"{', '.join(m)} mode{'s' if len(m) > 1 else ''} on {d}"
                     for d, m in by_device.items())


def _grouped_headlines(pairs):
    """One line per distinct finding, naming every mode and device it was seen in."""
    groups = {}
    for pair in pairs:
        groups.setdefault(pair.finding, []).append(pair)
    lines = []
    for same in groups.values():
        where = _places([(pair.device, pair.mode) for pair in same])
        if same[0].order != 1:
            where += f", order {same[0].order}"
        lines.append(same[0].headline(where))
    return lines


def _failure_rank(pair):
    """Failures against the reference first, then the worst."""
    return (pair.against not in (FINITE_DIFFERENCES, DECLARED), -pair.n_failed / max(pair.n_total, 1))


_COLUMNS = ("device", "mode", "ord", "output", "input", "against", "dtype",
            "max abs err", "max rel err", "atol/rtol", "failed", "verdict")


def _row(pair):
    return (pair.device, pair.mode, str(pair.order), pair.output, pair.input, pair.against,
            pair.dtype, f"{pair.max_abs_error:.2e}", f"{pair.max_rel_error:.2e}",
            f"{pair.atol:g}/{pair.rtol:g}", pair.tally, pair.verdict)


def format_table(pairs):
    if not pairs:
        return "(no Jacobian block was compared)"
    rows = [_COLUMNS] + [_row(p) for p in sorted(pairs, key=lambda p: (p.ok, not p.decisive))]
    widths = [max(len(r[c]) for r in rows) for c in range(len(_COLUMNS))]
    return "\n".join("  ".join(cell.ljust(w) for cell, w in zip(r, widths)).rstrip() for r in rows)


def _mode_lines(modes):
    return [f"{m.status}: {m.where}: {m.reason}" if m.status != "checked"
            else f"gradient used in {m.where}: {m.obtained}" for m in modes
            if m.status != "checked" or m.obtained]


def _placement_lines(modes):
    """'ops ran where asked, on CPU:1: eager 13 ops, xla one compiled call', per device."""
    by_device = {}
    for m in modes:
        if m.status == "checked" and m.placed:
            order = "" if m.order == 1 else f" (order {m.order})"
            by_device.setdefault(m.device, []).append(f"{m.mode}{order} {m.placed}")
    return [f"ops that compute on floats ran where asked, on {device}: {', '.join(parts)}"
            for device, parts in by_device.items()]
