"""The verdict on one order's Jacobians: each mode against the finite
differences (and the declared reference), then the modes against each other."""
from gradcheck.numerics import compare, layout
from gradcheck.report import DECLARED, FINITE_DIFFERENCES, PairResult


class Judge:
    """Compares Jacobian blocks and writes one report row per block. `reference`
    is the finite differences (numerics.finite_differences.Reference); `support`
    the entries where the arrays can be nonzero (see sharpen.comparison_support)."""

    def __init__(self, problem, findings, reference, support):
        self.problem, self.findings = problem, findings
        self.reference, self.support = reference, support

    def judge(self, results, intended):
        """Every mode against the references, then the modes with each other."""
        agreement = {}
        for where, (blocks, result, none_inputs) in results.items():
            fd_pairs = self.against_differences(blocks, where, none_inputs, intended is None,
                                                self.support)
            declared_pairs = (self.compare(blocks, intended, DECLARED, where, none_inputs,
                                           support=self.support)
                              if intended is not None else None)
            self.findings.obtained(result, _obtained(fd_pairs, declared_pairs, none_inputs,
                                                     len(self.problem.wrt)))
            agreement[where] = all(p.ok for p in (declared_pairs or fd_pairs))
        if intended is not None and self._same_jacobian(intended, self.reference.blocks):
            self.findings.note("the declared reference equals the finite differences: "
                               "this gradient is not wrong on purpose.")
        self._compare_modes(results, agreement)

    def against_differences(self, blocks, where, none_inputs, decisive, support=None):
        return self.compare(blocks, self.reference.blocks, FINITE_DIFFERENCES, where, none_inputs,
                            decisive=decisive, kinks=self.reference.kinks, support=support)

    def _compare_modes(self, results, agreement):
        if len(results) < 2:
            return
        # The baseline is the first mode whose gradient is right, so that one
        # broken mode does not make every other look broken.
        keys = list(results)
        base = next((k for k in keys if agreement[k]), keys[0])
        label = f"{base[1]} on {base[0]}"
        for key in keys:
            if key != base:
                self.compare(results[key][0], results[base][0], label, key, results[key][2],
                             support=self.support, exact_nonfinite=True)

    def compare(self, actual, expected, against, where, none_inputs, decisive=True, kinks=None,
                support=None, exact_nonfinite=False):
        """Report rows for every block; `support` only for arrays that are zero
        outside the gradients' joined sparsity."""
        support = support or {}
        pairs = []
        for position, i in enumerate(self.problem.wrt):
            for k in range(len(self.problem.out_index)):
                slack = (self.reference.uncertainty.get((k, i)) if against == FINITE_DIFFERENCES
                         else None)
                result = compare.compare_block(actual[(k, i)], expected[(k, i)],
                                               *self.problem.pair_tolerance(k, i),
                                               None if kinks is None else kinks[(k, i)],
                                               support.get((k, i)), exact_nonfinite, slack,
                                               self.reference.bounds.get((k, i)))
                pairs.append(self._pair(k, i, result, against, where,
                                        position in none_inputs, decisive,
                                        (actual[(k, i)], expected[(k, i)])))
        self.findings.pairs.extend(pairs)
        return pairs

    def _pair(self, k, i, result, against, where, gradient_is_none, decisive, arrays):
        x, spec = self.problem.inputs[i], self.problem.diff_specs[k]
        atol, rtol = self.problem.pair_tolerance(k, i)
        worst_output = worst_input = "(no entries)"
        if result.worst:
            worst_output, worst_input = self._labels(k, i, result.worst)
        unchecked = ("d {} / d {}".format(*self._labels(k, i, result.unchecked))
                     if result.unchecked else "")
        device_name, mode = where
        return PairResult(
            device=device_name, mode=mode, order=self.problem.order, output=spec.name,
            input=x.name, against=against, dtype=x.dtype, output_shape=spec.shape,
            input_shape=x.shape, atol=atol, rtol=rtol, n_total=result.n_total,
            n_failed=result.n_failed, n_unreliable=result.n_unreliable,
            n_kinks=result.n_kinks, reference_uncertainty=result.worst_slack,
            worst_bounds=result.worst_bounds,
            max_abs_error=result.max_abs_error, max_rel_error=result.max_rel_error,
            worst_output=worst_output, worst_input=worst_input,
            worst_actual=result.worst_actual, worst_expected=result.worst_expected,
            gradient_is_none=gradient_is_none, decisive=decisive,
            n_inconclusive=result.n_inconclusive, undecided=result.undecided,
            first_unchecked=unchecked, arrays=None if result.ok else arrays,
        )

    def _labels(self, k, i, entry):
        """('output[1]', 'x[0, 2]') for the Jacobian entry (row, column) of block (k, i)."""
        x, spec = self.problem.inputs[i], self.problem.diff_specs[k]
        row, col = entry
        return (layout.component_label(spec.name, spec.shape, spec.is_complex, row),
                layout.component_label(x.name, x.shape, x.is_complex, col))

    def _same_jacobian(self, first, second):
        for i in self.problem.wrt:
            atol, rtol = self.problem.input_tolerance(self.problem.inputs[i])
            for k in range(len(self.problem.out_index)):
                if not compare.compare_block(first[(k, i)], second[(k, i)], atol, rtol).ok:
                    return False
        return True


def _obtained(fd_pairs, declared_pairs, none_inputs, n_wrt):
    """Which gradient a mode actually got, in words."""
    is_derivative = all(p.ok for p in fd_pairs)
    if declared_pairs is None:
        if is_derivative:
            return "the derivative"
        if not any(p.n_failed for p in fd_pairs):
            return "a gradient the finite differences could not judge"
        return "no gradient (None)" if len(none_inputs) == n_wrt else "a gradient that is not the derivative"
    is_declared = all(p.ok for p in declared_pairs)
    if is_declared:
        return "the declared gradient"
    if is_derivative:
        return "the derivative, not the declared gradient (the override did not take effect)"
    if len(none_inputs) == n_wrt:
        return "no gradient (None)"
    return "neither the derivative nor the declared gradient"
