"""gradcheck: are the gradients TensorFlow uses for your function right?"""
from gradcheck.check import check_gradients
from gradcheck.compare import TOLERANCES
from gradcheck.errors import CheckSetupError, GradientCheckError
from gradcheck.report import GradientReport

__all__ = [
           "TOLERANCES",
           "CheckSetupError",
           "GradientCheckError",
           "GradientReport",
           "check_gradients",
]
__version__ = "0.1.0"
