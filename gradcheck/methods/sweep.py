"""Every mode on every device, in order, and the determinism probe of the
modes whose gradient disagrees."""
from gradcheck import progress
from gradcheck.execution.attempt import run_mode, vjp_spread
from gradcheck.execution.devices import short_name


def run_every_mode(problem, options, target_for, measure, findings):
    """{(device name, mode): run_mode's outcome} for the modes that were checked."""
    results = {}
    progress.expect(progress.MODES, len(options.devices) * len(options.modes))
    for device in options.devices:
        for mode in options.modes:
            outcome = run_mode(problem, mode, target_for(mode), device, measure, findings)
            progress.advance(progress.MODES)
            if outcome is not None:
                results[(short_name(device), mode)] = outcome
    return results


def note_nondeterministic_gradients(problem, options, checked, target_for, findings):
    """A mode whose gradient disagrees gets two VJPs of the same cotangents:
    if they differ, the gradient is random or races, which no comparison
    can tell from a wrong one, and the report says so. Only modes that
    disagree pay for it."""
    disagreeing = {(p.device, p.mode) for p in findings.pairs
                   if p.order == problem.order and p.decisive and not p.ok}
    devices = {short_name(d): d for d in options.devices}
    spreads = {}
    for device_name, mode in sorted(disagreeing & set(checked)):
        spread = vjp_spread(problem, mode, target_for(mode), devices[device_name])
        if spread is not None:
            spreads[f"{mode} mode on {device_name}"] = spread
    if spreads:
        findings.note(
            f"the gradient is not deterministic ({', '.join(spreads)}): two VJPs with the "
            f"same cotangents differed by up to {max(spreads.values()):.3g}, so it cannot be "
            "told apart from a wrong one. Give random ops in the gradient a fixed seed "
            "(tf.random.stateless_*); for ops that race on a GPU, try "
            "tf.config.experimental.enable_op_determinism().")
