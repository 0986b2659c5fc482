"""Every exception gradcheck raises on purpose; catch `GradcheckError` for all of them."""


class GradcheckError(Exception):
    """The base of every exception gradcheck raises on purpose."""

    # AutoGraph re-raises an error from a tf.function's code as its own type only
    # when that type takes Exception's constructor (else as a StagingError).
    __init__ = Exception.__init__


class GradientCheckError(GradcheckError, AssertionError):
    """A gradient disagrees with its reference; `.report` holds the details.

    An `AssertionError` too, so that it fails a test like an `assert`. Raised
    with a message alone (and `.report` None) where there is no report, as by
    `assert_no_gradient`.
    """

    def __init__(self, report, reproduction=""):
        if isinstance(report, str):
            self.report, message = None, report
        else:
            self.report, message = report, report.failure_message()
        if reproduction:
            first, _, rest = message.partition("\n")
            message = f"{first}\n{reproduction}\n{rest}"
        super().__init__(message)


class CheckSetupError(GradcheckError, ValueError):
    """The function or its inputs cannot be checked as given (not a gradient bug)."""


class OptionError(GradcheckError, ValueError, TypeError):
    """An option (of check_gradients, a marker or the command line) has a value
    that cannot be used. A ValueError and a TypeError too, as Python's own
    checks of an argument raise one or the other."""


class DeviceUnavailable(GradcheckError, ValueError):
    """A device that TensorFlow does not see here (a GPU on a CPU-only machine)."""


class OpBuildError(GradcheckError, RuntimeError):
    """The C++ sources of a custom op did not compile or link."""


class CommandLineError(GradcheckError, ValueError):
    """The command line names something that cannot be used (a module, a dtype)."""
