"""`GradientTestCase`: a unittest mixin (for tf.test.TestCase and
unittest.TestCase classes alike) whose assertGradientsCorrect fails the test
with gradcheck's report, under unittest and pytest alike."""
from gradcheck.check import check_gradients


class GradientTestCase:
    """Mix into a test case: class MyOpTest(gradcheck.GradientTestCase, tf.test.TestCase)."""

    def assertGradientsCorrect(self, fn, inputs, msg=None, **check_options):
        """Check `fn`'s gradients at `inputs` with check_gradients(**check_options);
        on a mismatch, fail the test (self.failureException) with the report.
        Returns the GradientReport. A function that cannot be checked as given
        raises CheckSetupError: an error of the test, not a failure."""
        check_options["raise_on_failure"] = False
        report = check_gradients(fn, inputs, **check_options)
        if not report.ok:
            message = report.failure_message()
            raise self.failureException(f"{msg}\n{message}" if msg else message)
        return report
