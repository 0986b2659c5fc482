"""gradcheck.scan: every gradient a package or op library defines, checked on
inputs the scan finds by itself, with no test written per op."""
import importlib
import json
import os
import pathlib
import subprocess
import sys

import numpy as np
import pytest
import tensorflow as tf

from gradcheck import GradientCheckError, OptionError, check_gradients, scan

ROOT = pathlib.Path(__file__).resolve().parents[1]
EXAMPLE_OPS = str(ROOT / "examples" / "custom_ops" / "ops.py")
ZOO_RIGHT = {"ZooCube", "ZooLeakyRelu", "ZooMul", "ZooScale", "ZooMatVec", "ZooBiasAdd",
             "ZooCSquare"}


def statuses(report):
    return {r.name: r.status for r in report.results}


@pytest.mark.slow
def test_the_example_ops_scan_clean():
    report = scan(EXAMPLE_OPS)
    assert report.ok
    assert statuses(report) == {"Cube": "right", "RollAndSum": "right",
                                "CubeNoGradient": "not differentiable",
                                "CubeWithoutGradient": "not differentiable"}
    details = {r.name: r.detail for r in report.results}
    # Every float dtype the OpDef and the CPU kernels allow, float16 included.
    assert details["Cube"] == ("checked on float64 (2, 3), float64 (), float64 (3,), "
                               "float32 (2, 3), float16 (2, 3)")
    assert details["CubeNoGradient"] == "marked tf.no_gradient"
    assert details["CubeWithoutGradient"].startswith("no gradient is registered and the op is "
                                                     "not marked tf.no_gradient")
    assert report.override_only == ("CubeGradForgetsTheSquare", "CubeStraightThrough")


@pytest.mark.slow
def test_every_bug_zoo_op_is_found_wrong_and_every_right_one_passes():
    report = scan("tests.bugzoo.zoo_ops")
    found = statuses(report)
    assert len(found) == 20
    assert {op for op, status in found.items() if status == "right"} == ZOO_RIGHT
    assert {op for op, status in found.items() if status == "wrong"} == set(found) - ZOO_RIGHT
    assert not report.ok
    # The order-2 and float16-only bugs are found by the scan's own choices.
    details = {r.name: r.detail for r in report.results}
    assert "order 2" in details["ZooCubeStopGradient"]
    assert details["ZooCubeHalfInt8"].startswith("float16 () (shrunk from (2, 3)): ")


@pytest.mark.slow
def test_a_wrong_gradients_reproduction_can_be_pasted_and_fails():
    report = scan("tests.bugzoo.zoo_ops", modes=["eager"], order=1, examples=1)
    wrong = next(r for r in report.results if r.name == "ZooMatVecNoTranspose")
    first, call = wrong.reproduction.splitlines()
    assert first == "Reproduce with:"
    import tests
    import tests.bugzoo.zoo_ops

    with pytest.raises(GradientCheckError, match="is wrong in eager mode"):
        exec(call.strip(), {"np": np, "tf": tf, "check_gradients": check_gradients,
                            "tests": tests})


def example_ops(monkeypatch):
    """The example ops module, under the name its own tests import it by."""
    monkeypatch.syspath_prepend(str(ROOT / "examples" / "custom_ops"))
    return importlib.import_module("ops")


def test_a_compiled_library_is_scanned_by_its_path(monkeypatch):
    library = example_ops(monkeypatch).library  # importing it registers the gradients
    report = scan(str(library.path), modes=["eager"], order=1, examples=1, dtypes=["float64"])
    assert statuses(report) == {"Cube": "right", "RollAndSum": "right",
                                "CubeNoGradient": "not differentiable",
                                "CubeWithoutGradient": "not differentiable"}


SECOND_BUILD = """
import sys
sys.path.insert(0, "examples/custom_ops")
import ops  # loads the example library first
import gradcheck
again = gradcheck.build_op_library(["examples/custom_ops/cube_op.cc"], name="scan_cube_ops_again")
try:
    gradcheck.scan(str(again.path))
except gradcheck.OptionError as error:
    print(error)
"""


@pytest.mark.slow
def test_a_second_build_of_registered_ops_is_refused_with_the_reason():
    # In a process of its own: kernels registered twice break the first library's ops.
    result = subprocess.run([sys.executable, "-c", SECOND_BUILD], cwd=ROOT, capture_output=True,
                            text=True, timeout=300, env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2"})
    assert "defines no op TensorFlow had not registered already" in result.stdout, result.stderr


def test_tensorflows_own_ops_are_scanned_by_op_type():
    report = scan(["Sin", "BiasAdd", "Sum", "AddN"], modes=["eager", "graph"], order=1,
                  examples=1, dtypes=["float64"])
    assert report.ok
    assert statuses(report) == dict.fromkeys(["Sin", "BiasAdd", "Sum", "AddN"], "right")
    details = {r.name: r.detail for r in report.results}
    assert details["BiasAdd"] == "checked on float64 (2, 2), (2,)"  # found by the shape search
    assert details["AddN"] == "checked on float64 (2, 3), (2, 3)"  # a list input of two tensors


def test_an_op_whose_inputs_the_scan_cannot_find_is_reported_and_fails_under_strict():
    # Polygamma's order a must be a whole number: every value drawn gives NaN.
    report = scan(["Polygamma"], modes=["eager"], order=1, examples=1, dtypes=["float64"])
    [result] = report.results
    assert result.status == "no valid inputs"
    assert result.detail == (
        "no inputs ran in float64: tried shapes of rank 0 to 4 and values of both signs; errors "
        "seen: outputs not finite (x12). Give an input hint (docs/scan.md).")
    assert report.ok
    assert not scan(["Polygamma"], modes=["eager"], order=1, examples=1, dtypes=["float64"],
                    strict=True).ok


def test_a_hint_gives_the_inputs_the_opdef_cannot():
    hints = {"Transpose": {"inputs": {"perm": [1, 0]}, "shapes": {"x": (2, 3)}},
             "Conv2D": {"attrs": {"strides": [1, 1, 1, 1], "padding": "VALID"},
                        "shapes": {"input": (1, 3, 3, 2), "filter": (2, 2, 2, 1)}}}
    report = scan(["Transpose", "Conv2D"], modes=["eager"], order=1, examples=1,
                  dtypes=["float64"], hints=hints)
    assert statuses(report) == {"Transpose": "right", "Conv2D": "right"}
    assert report.results[1].detail == "checked on float64 (1, 3, 3, 2), (2, 2, 2, 1)"


def test_a_packages_own_hints_are_read_from_its_modules(tmp_path, monkeypatch):
    example_ops(monkeypatch)
    # A hint that leaves no finite forward pass shows that the module's hints were used.
    (tmp_path / "hinted_ops.py").write_text(
        "from ops import library  # noqa: F401\n"
        "GRADCHECK_SCAN_HINTS = {'RollAndSum': {'inputs': {'x': [float('nan')] * 3}}}\n")
    report = scan(str(tmp_path / "hinted_ops.py"), modes=["eager"], order=1, examples=1,
                  dtypes=["float64"])
    assert statuses(report)["Cube"] == "right"
    [rolled] = [r for r in report.results if r.name == "RollAndSum"]
    assert rolled.status == "no valid inputs"
    assert "outputs not finite" in rolled.detail
    # A module with no op library and no gradients of its own has nothing to scan.
    (tmp_path / "no_ops.py").write_text("GRADCHECK_SCAN_HINTS = {}\n")
    assert scan(str(tmp_path / "no_ops.py")).results == ()


@pytest.mark.parametrize("call, message", [
    (lambda: scan(["Sin"], examples=0), "examples must be an integer >= 1, got 0"),
    (lambda: scan(["NoSuchOp"]), "tf.raw_ops has no op NoSuchOp"),
    (lambda: scan("/nowhere/ops.so"), "no such op library: /nowhere/ops.so"),
    (lambda: scan("no_such_package_here"), "cannot import 'no_such_package_here'"),
    (lambda: scan(["Sin"], hints={"Sin": {"shape": (2,)}}),
     r"hints\['Sin'\] takes the keys attrs, inputs, shapes; got \['shape'\]"),
    (lambda: scan(["Sin"], hints={"Sin": {"shapes": {"x": (2, -1)}}}),
     r"must be a tuple of sides >= 0, got \(2, -1\)"),
])
def test_bad_scan_arguments_are_refused_with_the_reason(call, message):
    with pytest.raises(OptionError, match=message):
        call()


@pytest.mark.slow
def test_the_command_line_scan_writes_the_table_and_json(tmp_path):
    from tests.test_cli import gradcheck_cli

    out = tmp_path / "scan.json"
    result = gradcheck_cli("scan", "tests.bugzoo.zoo_ops", "--modes", "eager", "--order", "1",
                           "--examples", "1", "--dtype", "float64,complex128",
                           "--json", str(out), cwd=ROOT)
    assert result.returncode == 1, result.stderr
    assert result.stdout.startswith("gradcheck scan of tests.bugzoo.zoo_ops: FAILED (")
    assert "[20/20] ZooScaleScalarPath: wrong" in result.stderr
    rows = json.loads(out.read_text())["results"]
    # In float64 and complex128 at order 1, the float16-only and order-2 bugs hide.
    assert {r["name"] for r in rows if r["status"] == "right"} == ZOO_RIGHT | {
        "ZooCubeHalfInt8", "ZooCubeStopGradient"}
    assert all(r["reproduction"].startswith("Reproduce with:") for r in rows
               if r["status"] == "wrong")


def test_the_command_line_scan_exits_2_on_a_target_it_cannot_read(tmp_path):
    from tests.test_cli import gradcheck_cli

    result = gradcheck_cli("scan", "no_such_package_here", cwd=tmp_path)
    assert result.returncode == 2
    assert "gradcheck: error: cannot import 'no_such_package_here'" in result.stderr
