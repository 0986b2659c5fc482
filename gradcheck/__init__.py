"""gradcheck: are the gradients TensorFlow uses for your function right?"""
from gradcheck.check import check_gradients
from gradcheck.compare import TOLERANCES
from gradcheck.errors import CheckSetupError, GradientCheckError
from gradcheck.no_gradient import assert_no_gradient
from gradcheck.oplib import OpBuildError, build_op_library
from gradcheck.report import GradientReport

__all__ = [
    "TOLERANCES",
    "CheckSetupError",
    "GradientCheckError",
    "GradientReport",
    "OpBuildError",
    "assert_no_gradient",
    "build_op_library",
    "check_gradients",
]
__version__ = "0.1.0"
