"""What one pytest session's checks found: rows for the summary, the JSON
report and JUnit, gathered across pytest-xdist workers."""
import json
import pathlib
import platform
import sys

from gradcheck.report import DECLARED, FINITE_DIFFERENCES, NO_GRADIENT


def rows_of(report, test):
    """One row per (device, mode, output, input) against the reference."""
    rows = []
    for pair in report.pairs:
        if pair.against not in (FINITE_DIFFERENCES, DECLARED, NO_GRADIENT) or not pair.decisive:
            continue
        rows.append({
            "test": test, "function": report.function, "source": report.source,
            "device": pair.device, "mode": pair.mode, "order": pair.order,
            "output": pair.output, "input": pair.input, "dtype": pair.dtype,
            "shape": list(pair.input_shape), "max_abs_error": pair.max_abs_error,
            "error_over_tolerance": pair.error_ratio, "verdict": "ok" if pair.ok else "FAIL",
        })
    for mode in report.modes:
        if mode.status != "checked":
            verdict = "FAIL" if mode.status == "failed" or report.strict else "skipped"
            rows.append({
                "test": test, "function": report.function, "source": report.source,
                "device": mode.device, "mode": mode.mode, "order": mode.order, "output": "",
                "input": "", "dtype": "", "shape": [], "max_abs_error": None,
                "error_over_tolerance": None, "verdict": verdict, "reason": mode.reason,
            })
    return rows


def _bare_row(test, function, verdict, reason):
    return {"test": test, "function": function, "source": "", "device": "", "mode": "",
            "order": 1, "output": "", "input": "", "dtype": "", "shape": [],
            "max_abs_error": None, "error_over_tolerance": None, "verdict": verdict,
            "reason": reason}


class CheckLog:
    """Rows of every check, and the gradient names the checks exercised."""

    def __init__(self):
        self.rows = []
        self.gradients_used = set()
        self._sent = 0, set()  # rows and gradients already handed on by take_unsent

    def add(self, report, test):
        self.rows.extend(rows_of(report, test))
        self.gradients_used.update(report.gradients_used)

    def add_error(self, test, function, error):
        reason = str(error).splitlines()[0] if str(error) else type(error).__name__
        self.rows.append(_bare_row(test, function, "ERROR", reason))

    def add_skipped(self, test, function, reason):
        self.rows.append(_bare_row(test, function, "skipped", reason))

    def take_unsent(self):
        """What was added since the last call, as merge takes it: a pytest-xdist
        worker sends it with each test report, so an interrupted run loses nothing."""
        rows, gradients = self._sent
        data = {"rows": self.rows[rows:], "gradients_used": sorted(self.gradients_used - gradients)}
        self._sent = len(self.rows), set(self.gradients_used)
        return data

    def merge(self, data):
        self.rows.extend(data.get("rows", []))
        self.gradients_used.update(data.get("gradients_used", []))

    def worst_first(self, rows=None):
        rank = {"FAIL": 0, "ERROR": 0, "ok": 1, "skipped": 2}
        return sorted(self.rows if rows is None else rows,
                      key=lambda r: (rank.get(r["verdict"], 3), -(r["error_over_tolerance"] or 0.0)))

    def summary_rows(self):
        """Rows that differ only in their numbers (Hypothesis examples, outputs of
        one check) folded into one, keeping the worst, with a count."""
        folded = {}
        for row in self.rows:
            key = tuple(str(row[k]) for k in ("test", "function", "source", "device", "mode",
                                               "dtype", "shape", "verdict"))
            kept = folded.get(key)
            if kept is None:
                folded[key] = dict(row, count=1)
                continue
            kept["count"] += 1
            if (row["error_over_tolerance"] or 0.0) > (kept["error_over_tolerance"] or 0.0):
                folded[key] = dict(row, count=kept["count"])
        return self.worst_first(list(folded.values()))

    def write_json(self, path):
        path = pathlib.Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        document = {"environment": environment(), "rows": self.worst_first(),
                    "gradients_used": sorted(self.gradients_used)}
        path.write_text(json.dumps(document, indent=2, default=str) + "\n")


def environment():
    tf = sys.modules.get("tensorflow")
    devices = []
    if tf is not None:
        devices = [d.name for d in tf.config.list_logical_devices()]
    import gradcheck

    return {"gradcheck": gradcheck.__version__, "python": platform.python_version(),
            "tensorflow": getattr(tf, "__version__", None), "devices": devices}


_COLUMNS = (("test", 40), ("function", 20), ("source", 19), ("device", 6), ("mode", 8),
            ("dtype", 10), ("shape", 10), ("err/tol", 9), ("verdict", 7), ("n", 5))


def summary_lines(rows):
    """The terminal table, worst first."""
    def cells(row):
        ratio = row["error_over_tolerance"]
        return (row["test"], row["function"], row["source"], row["device"], row["mode"],
                row["dtype"], "x".join(map(str, row["shape"])) or "()" if row["dtype"] else "",
                "" if ratio is None else f"{ratio:.3g}", row["verdict"], str(row.get("count", 1)))

    table = [tuple(name for name, _ in _COLUMNS)] + [cells(r) for r in rows]
    widths = [min(max(len(str(r[i])) for r in table), width) for i, (_, width) in
              enumerate(_COLUMNS)]
    return ["  ".join(_fit(str(cell), w) for cell, w in zip(r, widths)).rstrip() for r in table]


def _fit(text, width):
    return text.ljust(width) if len(text) <= width else "..." + text[-(width - 3):]
