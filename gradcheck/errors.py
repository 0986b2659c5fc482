"""The exceptions a user of gradcheck can meet."""


class GradientCheckError(AssertionError):
    """A gradient disagrees with its reference; `.report` holds the details."""

    def __init__(self, report):
        self.report = report
        super().__init__(report.failure_message())


class CheckSetupError(ValueError):
    """The function or its inputs cannot be checked as given (not a gradient bug)."""
