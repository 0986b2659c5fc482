"""Full mode's driver: every mode's whole Jacobian against finite differences
(sharpened where they disagree), the declared reference and each other."""
import numpy as np

from gradcheck.errors import CheckSetupError
from gradcheck.execution import failures, probes
from gradcheck.execution.devices import short_name
from gradcheck.jacobian import analytic
from gradcheck.jacobian import forward_mode as jvp
from gradcheck.jacobian.assemble import ModeJacobians
from gradcheck.methods import sharpen
from gradcheck.methods.judge import Judge
from gradcheck.methods.sweep import note_nondeterministic_gradients, run_every_mode
from gradcheck.numerics import finite_differences
from gradcheck.report import DECLARED


def check_in_full(problem, options, target_for, point, findings, declared):
    """`declared` is the user's reference VJP, or None."""
    jacobians = ModeJacobians(problem, options.rng, findings)
    intended = jacobians.declared(declared) if declared else None
    results = run_every_mode(problem, options, target_for, lambda run, where: jacobians.of_run(run),
                             findings)
    # The finite differences come after the gradients, whose sparsity lets
    # columns that share no output be perturbed together.
    claimed = jacobians.built_in_full(results) + ([intended] if intended else [])
    pattern = sharpen.claimed_sparsity(claimed, problem)
    reference = finite_differences.numeric_jacobian(
        point.evaluate, point.inputs, problem.wrt, problem.diff_specs, point.outputs, options.eps,
        pattern=pattern, precision=problem.tolerances.computed_in)
    compared = [r[0] for r in results.values()] + ([intended] if intended is not None else [])
    sharpen.refine_where_gradients_disagree(reference, compared, problem, pattern)
    support = sharpen.comparison_support(reference, pattern, problem)
    sharpen.sharpen_where_gradients_disagree(reference, compared, problem, support)
    _note_kinks(reference, problem, findings)
    judge = Judge(problem, findings, reference, support)
    judge.judge(results, intended)
    note_nondeterministic_gradients(problem, options, results, target_for, findings)
    if options.forward_mode and problem.order == 1:
        devices = {short_name(d): d for d in options.devices}
        for (device_name, mode), (blocks, _, _) in results.items():
            if mode in jvp.JVP_MODES:
                _check_forward_mode(problem, target_for(mode), devices[device_name], mode,
                                    blocks, judge, intended, options.rng)


def _note_kinks(reference, problem, findings):
    """Count the input elements whose finite differences sit on a kink."""
    for i in problem.wrt:
        x = problem.inputs[i]
        kinked = np.zeros(x.real_size, dtype=bool)
        for (_, j), mask in reference.kinks.items():
            if j == i and mask.size:
                kinked |= mask.any(axis=0)
        if problem.order == 1:
            findings.kinked_elements += int(kinked.sum())
            findings.checked_elements += kinked.size
        if kinked.any():
            findings.note(
                f"{int(kinked.sum())} of {kinked.size} real components of {x.name}"
                f"{'' if problem.order == 1 else f' (order {problem.order})'} sit on a kink or "
                "step (the one-sided differences disagree); there a gradient passes if it lies "
                "between them.")


def _check_forward_mode(problem, target, device, mode, reverse, judge, intended, rng):
    """The JVP Jacobian against the finite differences (or the declared
    gradient) and against this mode's reverse-mode Jacobian."""
    where = (short_name(device), f"{mode} (forward)")
    scales = analytic.row_scales(problem.n_columns, rng)
    try:
        blocks = jvp.forward_jacobian(
            mode, target, problem.inputs, problem.wrt, problem.out_index, problem.diff_specs,
            device, scales, max(1, min(problem.batch, problem.n_columns)))
    except CheckSetupError:
        raise
    except Exception as error:  # noqa: BLE001  (whatever forward mode raised is the finding)
        status = "skipped" if failures.is_unsupported(error) else "failed"
        judge.findings.mode(*where, problem.order, status,
                            "forward mode (ForwardAccumulator) raised " + probes.reason(error))
        return
    judge.findings.mode(*where, problem.order, "checked")
    judge.against_differences(blocks, where, set(), intended is None)
    if intended is not None:
        judge.compare(blocks, intended, DECLARED, where, set())
    judge.compare(blocks, reverse, f"{mode} reverse mode", where, set(), exact_nonfinite=True)
