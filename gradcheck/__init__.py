"""gradcheck: are the gradients TensorFlow uses for your function right?

The names below are loaded on first use, so that the pytest plugin (imported by
every pytest run in the environment) costs almost nothing at start-up.
"""
import importlib

__version__ = "0.1.0"

_PUBLIC = {
    "check_gradients": "gradcheck.check",
    "TOLERANCES": "gradcheck.numerics.compare",
    "CheckSetupError": "gradcheck.errors",
    "CommandLineError": "gradcheck.errors",
    "DeviceUnavailable": "gradcheck.errors",
    "GradcheckError": "gradcheck.errors",
    "GradientCheckError": "gradcheck.errors",
    "GradientReport": "gradcheck.report",
    "assert_no_gradient": "gradcheck.testing.no_gradient",
    "OpBuildError": "gradcheck.errors",
    "OptionError": "gradcheck.errors",
    "build_op_library": "gradcheck.testing.oplib",
    "GradientTestCase": "gradcheck.testing.testcase",
    "compute_gradient": "gradcheck.testing.compat",
    "max_error": "gradcheck.testing.compat",
    "gradient_test": "gradcheck.testing.property_tests",
    "scan": "gradcheck.testing.scan.scanner",
}

__all__ = sorted(_PUBLIC)


def __getattr__(name):
    if name in _PUBLIC:
        return getattr(importlib.import_module(_PUBLIC[name]), name)
    raise AttributeError(f"module 'gradcheck' has no attribute {name!r}")


def __dir__():
    return sorted(list(globals()) + list(_PUBLIC))
