"""Each mode's Jacobian: the first in full, the later ones from the first's
pattern where they match it (known.py), and the declared reference's."""
from gradcheck.errors import CheckSetupError
from gradcheck.execution import sources
from gradcheck.execution.devices import CPU
from gradcheck.execution.failures import GradientShapeError
from gradcheck.jacobian import analytic, known


class ModeJacobians:
    """Builds the Jacobians of one order's modes, which share random scales and
    the first mode's Jacobian."""

    def __init__(self, problem, rng, findings):
        self.problem, self.rng, self.findings = problem, rng, findings
        self.row_scales = analytic.row_scales(problem.n_rows, rng)
        self._column_scales = None  # drawn when first needed, after the row scales
        self._known = None  # the first mode's Jacobian

    def of_run(self, run):
        """The first mode's Jacobian in full; each later one from a VJP per group
        of rows that share no column, or from a few random projections
        (known.py), when it matches the first, else in full too."""
        if self._known is not None:
            blocks = self._known.jacobian(run, self.problem.pair_tolerance)
            if blocks is not None:
                return blocks
        blocks = self.in_full(run)
        if self._known is None:
            p = self.problem
            self._known = known.KnownJacobian(blocks, p.inputs, p.wrt, p.diff_specs, self.rng)
        return blocks

    def built_in_full(self, results):
        """The modes' Jacobians, less those from grouped rows or projections:
        those are nonzero only where the first mode's is."""
        made = self._known.made if self._known is not None else []
        return [r[0] for r in results.values() if not any(r[0] is m for m in made)]

    def in_full(self, run):
        """By columns when the inputs are the smaller side (verified against
        VJPs), else, or if that fails, by rows."""
        p = self.problem
        if analytic.columns_pay(p.inputs, p.wrt, p.diff_specs):
            try:
                return analytic.jacobian_by_columns(run, p.inputs, p.wrt, p.diff_specs,
                                                    self._scales_of_columns(), p.batch, self.rng,
                                                    p.input_tolerance)
            except analytic.ColumnsUnusable as reason:
                self.findings.note(f"Jacobian columns were not usable ({reason}); it was built "
                                   "row by row.", once=True)
            except Exception:  # noqa: BLE001  (building by rows raises the real error, if any)
                pass
        return analytic.analytic_jacobian(run, p.inputs, p.wrt, p.diff_specs, self.row_scales,
                                          p.batch)

    def _scales_of_columns(self):
        if self._column_scales is None:
            self._column_scales = analytic.row_scales(self.problem.n_columns, self.rng)
        return self._column_scales

    def declared(self, reference):
        """The Jacobian of the user's declared VJP `reference`."""
        p = self.problem
        names = ", ".join([x.name for x in p.inputs] + [f"d_{s.name}" for s in p.diff_specs])
        run = sources.DeclaredGradient(reference, p.values, p.wrt, CPU, names)
        try:
            return self.in_full(run)
        except GradientShapeError as error:
            raise CheckSetupError(f"the reference is not usable: {error}") from None
