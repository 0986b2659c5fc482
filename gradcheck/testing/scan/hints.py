"""Input hints: what an op author tells the scan about one op when its
OpDef is not enough (a permutation input, an attribute with no default).

    GRADCHECK_SCAN_HINTS = {
        "Transpose": {"inputs": {"perm": [1, 0]}, "shapes": {"x": (2, 3)}},
        "Conv2D": {"attrs": {"strides": [1, 1, 1, 1], "padding": "SAME"},
                   "shapes": {"input": (1, 4, 4, 2), "filter": (2, 2, 2, 3)}},
    }

next to the op's registration (any module of the scanned package), or
passed as scan(..., hints=...). Names are the op function's keywords.
"""
import dataclasses

import numpy as np

from gradcheck.errors import OptionError

KEYS = ("attrs", "inputs", "shapes")


@dataclasses.dataclass(frozen=True)
class Hint:
    attrs: tuple = ()  # (name, value): passed to the op
    inputs: tuple = ()  # (keyword, numpy array): the input's value, always
    shapes: tuple = ()  # (keyword, shape): the input's shape, values drawn

    def value_of(self, keyword):
        return dict(self.inputs).get(keyword)

    def shape_of(self, keyword):
        if keyword in dict(self.inputs):
            return dict(self.inputs)[keyword].shape
        return dict(self.shapes).get(keyword)


NO_HINT = Hint()


def parse_hints(hints, where="hints"):
    """{op type: Hint} from {op type: {"attrs": ..., "inputs": ..., "shapes": ...}}."""
    if hints is None:
        return {}
    if not isinstance(hints, dict):
        raise OptionError(f"{where} must be a dict of op type to hint, got {type(hints).__name__}.")
    return {op_type: _hint(op_type, hint, where) for op_type, hint in hints.items()}


def _hint(op_type, hint, where):
    if not isinstance(hint, dict) or set(hint) - set(KEYS):
        unknown = sorted(set(hint) - set(KEYS)) if isinstance(hint, dict) else hint
        raise OptionError(f"{where}[{op_type!r}] takes the keys {', '.join(KEYS)}; got {unknown!r}.")
    for key in KEYS:
        if not isinstance(hint.get(key, {}), dict):
            raise OptionError(f"{where}[{op_type!r}][{key!r}] must be a dict by name.")
    shapes = {}
    for name, shape in hint.get("shapes", {}).items():
        if not isinstance(shape, (tuple, list)) or not all(
                isinstance(side, int) and side >= 0 for side in shape):
            raise OptionError(f"{where}[{op_type!r}]['shapes'][{name!r}] must be a tuple of "
                              f"sides >= 0, got {shape!r}.")
        shapes[name] = tuple(shape)
    return Hint(attrs=tuple(hint.get("attrs", {}).items()),
                inputs=tuple((k, np.asarray(v)) for k, v in hint.get("inputs", {}).items()),
                shapes=tuple(shapes.items()))
