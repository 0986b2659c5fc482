"""The pytest plugin, registered through the pytest11 entry point.

Every pytest run in the environment imports this module, so it imports nothing
heavy: TensorFlow is loaded by the first check (or by the tf_device fixture).
"""
import warnings

import pytest

from gradcheck.errors import OptionError
from gradcheck.testing import config as configuration
from gradcheck.testing.session import CheckLog, summary_lines

LOG = pytest.StashKey()
CURRENT_TEST = pytest.StashKey()
_UNCOVERED = pytest.StashKey()  # gradients the coverage gate found unchecked
_LATE_ERRORS = pytest.StashKey()  # what went wrong after the tests ran
_JSON_WRITTEN = pytest.StashKey()  # the path of the JSON report, once written

_OPTIONS = [
    # (name, help, parse)
    ("devices", "devices to check on: cpu, gpu, all, or device names (GPU:1), comma-separated",
     configuration.parse_list),
    ("modes", "execution modes: eager, function, graph, xla, comma-separated (default: all)",
     configuration.parse_list),
    ("method", "auto, full or fast", str),
    ("tolerance-scale", "multiply every tolerance by this factor", configuration.parse_scale),
    ("json", "write a JSON report of every check to this path", str),
    ("artifacts", "folder for failure artifacts (heatmaps of |analytic - numeric|)", str),
    ("strict", "a mode that cannot run here fails the check instead of being skipped",
     configuration.parse_bool),
    ("require-coverage", "fail the run if PACKAGE registers a gradient that no check exercised",
     str),
    ("hypothesis-profile", "load gradcheck's Hypothesis settings profile: ci (derandomised, "
     "50 examples, no deadline) or dev (20 examples, no deadline)", str),
    ("scan", "also run one test per gradient TARGET defines (a package, .py file or .so), on "
     "inputs found from each op's OpDef (docs/scan.md)", str),
]


def pytest_addoption(parser):
    group = parser.getgroup("gradcheck", "gradient checks (gradcheck)")
    for name, help_text, parse in _OPTIONS:
        ini = "gradcheck_" + name.replace("-", "_")
        if parse is configuration.parse_bool:
            group.addoption(f"--gradcheck-{name}", action="store_true", default=None,
                            dest=ini, help=f"{help_text} (ini: {ini})")
        else:
            group.addoption(f"--gradcheck-{name}", dest=ini, default=None, type=parse,
                            metavar=name.split("-")[-1].upper(), help=f"{help_text} (ini: {ini})")
        parser.addini(ini, help_text, default=None)


def option(config, name):
    """The command-line value of --gradcheck-NAME, else its ini twin, parsed."""
    key = "gradcheck_" + name.replace("-", "_")
    value = config.getoption(key)
    if value is not None:
        return value
    raw = config.getini(key)
    if raw in (None, "", []):
        return None
    parse = dict((n, p) for n, _, p in _OPTIONS)[name]
    try:
        return parse(raw)
    except Exception as error:  # noqa: BLE001  (any parse failure is a usage error)
        raise pytest.UsageError(f"ini option {key} = {raw!r}: {error}") from None


def session_config(config):
    return configuration.CheckConfig(
        modes=option(config, "modes"), devices=option(config, "devices"),
        method=option(config, "method") or "auto",
        tolerance_scale=option(config, "tolerance-scale") or 1.0,
        strict=bool(option(config, "strict")))


def pytest_configure(config):
    config.addinivalue_line(
        "markers", "gradcheck(modes=, devices=, method=, order=, atol=, rtol=, tolerance_scale=, "
        "strict=): configure the gradient checks of this test")
    config.stash[LOG] = CheckLog()
    config.stash[CURRENT_TEST] = None
    profile = option(config, "hypothesis-profile")
    if profile:
        load_hypothesis_profile(profile)
    _require_known_names(config)
    _require_usable_outputs(config)


def _require_known_names(config):
    """A misspelt mode, method or scale is a usage error now, not a traceback
    in every check. The checks are check_gradients' own, imported only when
    their option is given."""
    option(config, "tolerance-scale")  # parses the ini value, raising UsageError
    modes, method = option(config, "modes"), option(config, "method")
    if modes:
        from gradcheck.execution.modes import resolve_modes

        _as_usage_error("modes", resolve_modes, modes)
    if method:
        from gradcheck.options import require_method

        _as_usage_error("method", require_method, method)


def _require_usable_outputs(config):
    """A report path, artifacts folder or coverage package that cannot be used
    is a usage error now, not a traceback once the tests have run."""
    from gradcheck.testing import output_paths
    from gradcheck.testing.coverage import require_importable

    for name, check in (("json", output_paths.require_writable_file),
                        ("artifacts", output_paths.require_writable_folder),
                        ("require-coverage", require_importable)):
        value = option(config, name)
        if value:
            _as_usage_error(name, check, value)


def _as_usage_error(name, check, value):
    try:
        check(value)
    except OptionError as error:
        raise pytest.UsageError(f"--gradcheck-{name}: {error}") from None


def load_hypothesis_profile(name):
    from hypothesis import settings

    from gradcheck.testing.property_tests import PROFILES, register_profiles

    register_profiles()
    full = name if name.startswith("gradcheck-") else f"gradcheck-{name}"
    if full not in PROFILES:
        raise pytest.UsageError(f"--gradcheck-hypothesis-profile={name!r}: choose ci or dev")
    settings.load_profile(full)


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(session, config, items):
    """--gradcheck-scan's items join the collected tests, before -k and -m select."""
    target = option(config, "scan")
    if target:
        from gradcheck.testing.scan.pytest_items import scan_items

        merged = session_config(config)
        options = {"modes": list(merged.modes) if merged.modes else None,
                   "devices": list(merged.devices) if merged.devices else None,
                   "strict": merged.strict}
        items.extend(scan_items(session, target, config.stash[LOG], options))


def pytest_runtest_setup(item):
    item.config.stash[CURRENT_TEST] = item


class BoundChecker:
    """check_gradients with the session's and the test's configuration applied,
    recording every report for the summary."""

    def __init__(self, config):
        self.config = config

    def __call__(self, fn, inputs, **kwargs):
        from gradcheck.check import check_gradients
        from gradcheck.errors import GradientCheckError

        item = self.config.stash[CURRENT_TEST]
        merged = self.configuration(item)
        options = {**merged.check_kwargs(), **kwargs}
        log = self.config.stash[LOG]
        test = item.nodeid if item is not None else ""
        options["devices"], missing = self._available(options["devices"], options.get("strict"))
        for reason in missing:
            log.add_skipped(test, getattr(fn, "__name__", repr(fn)), reason)
        try:
            report = check_gradients(fn, inputs, **options)
        except GradientCheckError as error:
            self._record(log, error.report, test, item, error)
            raise
        except Exception as error:  # any other failure: an ERROR row in the summary, re-raised
            log.add_error(test, getattr(fn, "__name__", repr(fn)), error)
            raise
        self._record(log, report, test, item)
        return report

    @staticmethod
    def _available(devices, strict):
        """The configured devices TensorFlow sees; a missing GPU skips (or, strict, fails)."""
        from gradcheck.errors import DeviceUnavailable
        from gradcheck.execution.devices import resolve_devices

        if not devices:
            return devices, []
        if isinstance(devices, str):
            devices = configuration.parse_list(devices)
        if not isinstance(devices, (list, tuple)):
            return devices, []  # check_gradients names what is wrong with it
        available, missing = [], []
        for device in devices:
            try:
                available += resolve_devices([device])
            except DeviceUnavailable as error:
                missing.append(str(error))
        if missing and (strict or not available):
            if strict:
                pytest.fail("strict: " + "; ".join(missing), pytrace=False)
            pytest.skip("; ".join(missing))
        return available, missing

    def configuration(self, item):
        merged = session_config(self.config)
        if item is not None:
            for mark in reversed(list(item.iter_markers("gradcheck"))):
                if mark.args:
                    raise OptionError(f"@pytest.mark.gradcheck takes keywords only, got "
                                      f"{mark.args!r}: write e.g. "
                                      "@pytest.mark.gradcheck(modes=['eager']).")
                merged = merged.merged(**mark.kwargs)
        return merged

    def _record(self, log, report, test, item, error=None):
        log.add(report, test)
        if item is not None:
            item.user_properties.append(("gradcheck", f"{report.function}: "
                                         f"{'ok' if report.ok else 'FAILED'} "
                                         f"({len(report.pairs)} blocks, source {report.source})"))
        artifacts = option(self.config, "artifacts")
        if artifacts and not report.ok:
            _save_artifacts(report, artifacts, test, error)


def _save_artifacts(report, folder, test, error):
    """Heatmaps of a failure; if they cannot be written, the test keeps its own error."""
    from gradcheck.testing.heatmap import save_heatmaps

    try:
        save_heatmaps(report, folder, test)
    except Exception as failure:  # noqa: BLE001  (an artifact must never replace the finding)
        note = (f"gradcheck could not write the failure heatmaps to --gradcheck-artifacts="
                f"{folder!r}: {type(failure).__name__}: {failure}")
        if error is None:  # raise_on_failure=False: there is no error to carry the note
            warnings.warn(note, stacklevel=3)
        elif hasattr(error, "add_note"):
            error.add_note(note)
        else:  # Python < 3.11
            error.args = (f"{error.args[0]}\n{note}", *error.args[1:])


@pytest.fixture(scope="session")
def gradcheck(request):
    """check_gradients bound to the command line, ini and the test's marker.

    Session-scoped so that Hypothesis' function-scoped-fixture health check
    does not fire in @given tests; the marker is read from the running test.
    """
    return BoundChecker(request.config)


def _device_params(config):
    devices = option(config, "devices") or ("cpu",)
    if any(d.lower() == "all" for d in devices):
        from gradcheck import _tf

        return [d.name.replace("/device:", "")
                for d in _tf.tf().config.list_logical_devices() if d.device_type in ("CPU", "GPU")]
    return list(devices)


def pytest_generate_tests(metafunc):
    if "tf_device" in metafunc.fixturenames:
        metafunc.parametrize("tf_device", _device_params(metafunc.config), indirect=True)


@pytest.fixture
def tf_device(request):
    """A TensorFlow device name, one per configured device; GPUs TensorFlow
    cannot see are skipped with the reason."""
    from gradcheck.errors import DeviceUnavailable
    from gradcheck.execution.devices import resolve_devices

    try:
        return resolve_devices([request.param])[0]
    except DeviceUnavailable as error:
        pytest.skip(str(error))


def pytest_terminal_summary(terminalreporter, config):
    log = config.stash[LOG]
    if log.rows:
        terminalreporter.section("gradcheck")
        for line in summary_lines(log.summary_rows()):
            terminalreporter.write_line(line)
    if _JSON_WRITTEN in config.stash:
        terminalreporter.write_line(f"gradcheck: JSON report written to {config.stash[_JSON_WRITTEN]}")
    for message in config.stash.get(_LATE_ERRORS, []):
        terminalreporter.write_line(f"gradcheck: error: {message}", red=True)
    gap = config.stash.get(_UNCOVERED, None)
    if gap:
        terminalreporter.section("gradcheck coverage", red=True)
        terminalreporter.write_line(f"{len(gap)} gradient(s) defined by "
                                    f"{option(config, 'require-coverage')} were never checked:")
        for name, where in sorted(gap.items()):
            terminalreporter.write_line(f"  {name}: {where}")


def pytest_sessionfinish(session, exitstatus):
    config = session.config
    log = config.stash[LOG]
    if hasattr(config, "workerinput"):  # a pytest-xdist worker: hand the rest to the controller
        config.workeroutput["gradcheck"] = log.take_unsent()
        return
    json_path = option(config, "json")
    if json_path:
        _write_json(session, log, json_path)
    package = option(config, "require-coverage")
    if package:
        _gate_coverage(session, log, package)


def _write_json(session, log, path):
    try:
        log.write_json(path)
    except OSError as error:  # checked at start-up, but the disk may have changed since
        _fail_at_end(session, f"--gradcheck-json: could not write the report to {path!r}: {error}")
    else:
        session.config.stash[_JSON_WRITTEN] = path


def _gate_coverage(session, log, package):
    from gradcheck.testing.coverage import uncovered

    try:
        gap = uncovered(package, log.gradients_used)
    except Exception as error:  # noqa: BLE001  (importing the user's package may raise anything)
        _fail_at_end(session, f"--gradcheck-require-coverage: cannot import {package!r}: "
                              f"{type(error).__name__}: {error}")
        return
    session.config.stash[_UNCOVERED] = gap
    if gap and session.exitstatus == 0:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def _fail_at_end(session, message):
    """An error after the tests ran: said in the summary, and the run fails."""
    session.config.stash.setdefault(_LATE_ERRORS, []).append(message)
    if session.exitstatus == 0:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item, call):
    """On a pytest-xdist worker, each report carries the rows recorded since the
    last: rows sent only when the worker finishes are lost to a Ctrl-C."""
    report = yield
    if hasattr(item.config, "workerinput"):
        data = item.config.stash[LOG].take_unsent()
        if data["rows"] or data["gradients_used"]:
            report.gradcheck = data
    return report


@pytest.hookimpl(wrapper=True)
def pytest_report_from_serializable(config, data):
    """On the controller: the rows a worker's report carried join the log."""
    report = yield
    rows = getattr(report, "gradcheck", None)
    if rows:
        config.stash[LOG].merge(rows)
        del report.gradcheck  # merged once; not passed on to other plugins' reports
    return report


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node, error):
    data = getattr(node, "workeroutput", {}).get("gradcheck")
    if data:
        node.config.stash[LOG].merge(data)
