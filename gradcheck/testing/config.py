"""CheckConfig: how checks run, merged as defaults < ini < command line < marker < call."""
import argparse
import dataclasses
import math

from gradcheck.errors import OptionError

MARKER_KEYS = ("modes", "devices", "method", "order", "atol", "rtol", "tolerance_scale", "strict")


@dataclasses.dataclass(frozen=True)
class CheckConfig:
    modes: tuple = None  # None: every mode
    devices: tuple = None  # None: the CPU
    method: str = "auto"
    order: int = 1
    atol: object = None  # a number or {dtype: number}; None: the dtype table
    rtol: object = None
    tolerance_scale: float = 1.0
    strict: bool = False

    def __post_init__(self):
        # Frozen: the checked values replace the given ones once, here. numerics
        # loads numpy, which a pytest run without checks need not pay for.
        from gradcheck.numerics.compare import checked_tolerance, nonnegative_number

        object.__setattr__(self, "atol", checked_tolerance("atol", self.atol))
        object.__setattr__(self, "rtol", checked_tolerance("rtol", self.rtol))
        scale = nonnegative_number("tolerance_scale", self.tolerance_scale)
        if scale == 0:
            raise OptionError("tolerance_scale must be > 0, got 0: it multiplies the tolerances.")
        object.__setattr__(self, "tolerance_scale", scale)

    def merged(self, **overrides):
        """A copy with every override that is not None applied."""
        unknown = sorted(set(overrides) - set(MARKER_KEYS))
        if unknown:
            raise OptionError(f"unknown gradcheck option(s) {', '.join(unknown)}; "
                              f"use some of {', '.join(MARKER_KEYS)}.")
        return dataclasses.replace(self, **{k: v for k, v in overrides.items() if v is not None})

    def check_kwargs(self):
        """Keyword arguments for check_gradients."""
        return {
            "modes": list(self.modes) if self.modes else None,
            "devices": list(self.devices) if self.devices else None,
            "method": self.method,
            "order": self.order,
            "atol": _scaled(self.atol, 0, self.tolerance_scale),
            "rtol": _scaled(self.rtol, 1, self.tolerance_scale),
            "strict": self.strict,
        }


def _scaled(override, column, scale):
    if scale == 1.0:
        return override
    from gradcheck.numerics.compare import TOLERANCES

    if override is None or isinstance(override, dict):
        given = override or {}
        return {dtype: given.get(dtype, pair[column]) * scale for dtype, pair in TOLERANCES.items()}
    return float(override) * scale


def parse_list(text):
    """'eager, graph' -> ('eager', 'graph'); '' -> None."""
    if text is None:
        return None
    items = tuple(part.strip() for part in str(text).split(",") if part.strip())
    return items or None


def parse_scale(text):
    try:
        value = float(text)
    except (TypeError, ValueError):
        raise argparse.ArgumentTypeError(f"the tolerance scale must be a number, got {text!r}") from None
    if not math.isfinite(value) or value <= 0:
        raise argparse.ArgumentTypeError(f"the tolerance scale must be positive and finite, "
                                         f"got {text!r}")
    return value


def parse_bool(text):
    if isinstance(text, bool):
        return text
    lowered = str(text).strip().lower()
    if lowered in ("1", "true", "yes", "on"):
        return True
    if lowered in ("", "0", "false", "no", "off"):
        return False
    raise argparse.ArgumentTypeError(f"expected true or false, got {text!r}")
