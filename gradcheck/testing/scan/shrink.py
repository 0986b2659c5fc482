"""Shrinking a failing example to a smaller one that still fails, as
Hypothesis shrinks a failing gradient_test: fewer elements, the same values."""
import dataclasses
import re

import numpy as np

CHECKS = 8  # at most this many checks spent shrinking one failure
_ELEMENT = re.compile(r"^(\w+)(?:\[([\d, ]+)\])?")  # 'x[0, 3].imag' -> x, (0, 3)


def shrunk(example, fails, worst="", checks=CHECKS):
    """(the smallest example found from `example`, one step at a time, for
    which `fails(candidate)` is true; what `fails` returned for it, or None if
    no smaller example fails). `worst` names the worst element ('x[0, 3]'):
    the first step tries it alone."""
    found, candidates = None, smaller(example, worst)
    for _ in range(checks):
        candidate = next(candidates, None)
        if candidate is None:
            break
        outcome = fails(candidate)
        if outcome:
            example, found = candidate, outcome
            candidates = smaller(candidate, worst_element(outcome.report) or worst)
    return example, found


def worst_element(report):
    """'x[0, 3]': the input element of the worst failed pair, or '' if none."""
    return report.failed_pairs[0].worst_input if report.failed_pairs else ""


def smaller(example, worst=""):
    """Smaller examples, the most shrinking first. The tensors that share the
    largest shape shrink together (an elementwise op needs them alike), then
    each alone: to the worst element as a scalar, then by halving an axis or
    dropping an axis of side 1."""
    shrinkable = [i for i in example.wrt if np.ndim(example.inputs[i]) > 0
                  and np.size(example.inputs[i]) > 0
                  and example.call.hint.value_of(example.call.flat[i].name) is None]
    if not shrinkable:
        return
    largest = max((example.inputs[i].shape for i in shrinkable), key=np.prod)
    together = [i for i in shrinkable if example.inputs[i].shape == largest]
    groups = [together] + [[i] for i in shrinkable if len(together) > 1 or i not in together]
    for group in groups:
        for step in _steps(example.inputs[group[0]].shape, _index(example, group, worst)):
            inputs = list(example.inputs)
            for i in group:
                inputs[i] = step(inputs[i])
            yield dataclasses.replace(example, inputs=tuple(inputs))


def _index(example, group, worst):
    """The worst element's index, if it is an element of the group's tensors."""
    match = _ELEMENT.match(worst or "")
    names = example.call.tensor_names
    if not match or not match.group(2) or not any(names[i] == match.group(1) for i in group):
        return None
    return tuple(int(k) for k in match.group(2).split(","))


def _steps(shape, worst_index):
    if worst_index is not None and len(worst_index) == len(shape):
        yield lambda x: np.asarray(x[worst_index])
    for axis, side in enumerate(shape):
        if side == 1:
            yield lambda x, axis=axis: np.squeeze(x, axis=axis)
            continue
        half = (side + 1) // 2
        yield lambda x, axis=axis, half=half: np.take(x, range(half), axis=axis)
        yield lambda x, axis=axis, half=half, side=side: np.take(x, range(side - half, side),
                                                                 axis=axis)
