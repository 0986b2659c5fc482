"""The exceptions a user of gradcheck can meet."""


class GradientCheckError(AssertionError):
    """A gradient disagrees with its reference; `.report` holds the details."""

    def __init__(self, report, reproduction=""):
        self.report = report
        message = report.failure_message()
        if reproduction:
            first, _, rest = message.partition("\n")
            message = f"{first}\n{reproduction}\n{rest}"
        super().__init__(message)


class CheckSetupError(ValueError):
    """The function or its inputs cannot be checked as given (not a gradient bug)."""
