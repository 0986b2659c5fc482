"""gradcheck.scan of Python functions with their own gradient: the Defuns
and public tf.custom_gradient functions a package defines; shrinking a
failure; scanning a chosen few."""
import os
import pathlib
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from gradcheck import GradientCheckError, OptionError, check_gradients, scan
from tests.bugzoo import zoo

ROOT = pathlib.Path(__file__).resolve().parents[1]
_NAMES = {id(value): name for name, value in vars(zoo).items()}
DEFUN_BUGS = [b for b in zoo.ZOO if b.source in (zoo.DEFUN_GRAD, zoo.DEFUN_PYTHON)]
DEFUN_WRONG = {_NAMES[id(b.fn)] for b in DEFUN_BUGS}
DEFUN_FIXED = {_NAMES[id(b.fixed)] for b in DEFUN_BUGS if b.fixed is not None}


def statuses(report):
    return {r.name: r.status for r in report.results}


def module_file(tmp_path, name, source):
    path = tmp_path / f"{name}.py"
    path.write_text(textwrap.dedent(source))
    return str(path)


@pytest.mark.slow
def test_every_bug_zoo_defun_is_found_wrong_and_its_fixed_version_passes():
    assert len(DEFUN_WRONG) == 13 and len(DEFUN_FIXED) == 5
    report = scan("tests.bugzoo.zoo", only=sorted(DEFUN_WRONG | DEFUN_FIXED))
    found = statuses(report)
    assert {name for name, status in found.items() if status == "wrong"} == DEFUN_WRONG
    assert {name for name, status in found.items() if status == "right"} == DEFUN_FIXED
    assert {r.kind for r in report.results} == {"Defun"}
    details = {r.name: r.detail for r in report.results}
    # Wrong only where |x| > 1: found by the example whose values start above 1.
    assert details["defun_square_clipped_gradient"].startswith("float64 (): ")
    # A grad_func Defun has no gradient of its own: right at order 1, not wrong at order 2.
    assert details["defun_square"].endswith("; order 1 only: its gradient has no gradient")
    assert details["defun_complex_square"].startswith("checked on complex128 (2, 3)")


def test_public_custom_gradient_functions_are_found_with_their_annotations(tmp_path):
    target = module_file(tmp_path, "scanned_annotated", """
        import numpy as np
        import tensorflow as tf
        from tests.bugzoo.zoo import square_wrong_sign  # imported, not defined here

        @tf.custom_gradient
        def complex_square_no_conj(z: tf.complex128):
            return z * z, lambda dy: 2.0 * z * dy  # conj(z) is missing

        @tf.custom_gradient
        def add_row_bias_unreduced(x, b: tf.TensorSpec([1, 3], tf.float64)):
            return x + b, lambda dy: (dy, dy[:1])  # b's gradient must sum dy over the rows

        @tf.custom_gradient
        def cube(x: np.float32):
            return x * x * x, lambda dy: 3.0 * x * x * dy

        @tf.custom_gradient
        def _private_wrong(x):
            return x * x, lambda dy: -dy

        def without_custom_gradient(x):
            return x * x
    """)
    report = scan(target, modes=["eager"], order=1, examples=1)
    assert statuses(report) == {"add_row_bias_unreduced": "wrong", "complex_square_no_conj": "wrong",
                                "cube": "right"}
    assert {r.kind for r in report.results} == {"tf.custom_gradient"}
    details = {r.name: r.detail for r in report.results}
    assert details["complex_square_no_conj"].startswith("complex128 ")
    assert details["cube"] == "checked on float32 (2, 3)"  # its annotation, and no other dtype
    assert details["add_row_bias_unreduced"].startswith("float64 (2, 3), (1, 3)")


def test_a_wrong_function_is_shrunk_to_a_smaller_example_that_fails_the_same_way(tmp_path):
    target = module_file(tmp_path, "scanned_shrinking", """
        import tensorflow as tf

        @tf.custom_gradient
        def square_wrong_sign(x):
            return x * x, lambda dy: -2.0 * x * dy

        @tf.custom_gradient
        def square_wrong_sign_no_scalars(x):
            def grad(dy):  # raises on a scalar: a different failure, not a smaller one
                return -2.0 * x * dy + 0.0 * tf.reduce_sum(dy, axis=-1, keepdims=True)
            return x * x, grad
    """)
    report = scan(target, modes=["eager", "graph"], order=1, examples=1)
    wrong = {r.name: r for r in report.results}
    assert wrong["square_wrong_sign"].detail.startswith("float64 () (shrunk from (2, 3)): ")
    assert wrong["square_wrong_sign_no_scalars"].detail.startswith(
        "float64 (1,) (shrunk from (2, 3)): ")
    reproduction = wrong["square_wrong_sign"].reproduction
    assert reproduction.splitlines()[1] == "    from scanned_shrinking import square_wrong_sign"
    code = textwrap.dedent("\n".join(reproduction.splitlines()[1:]))
    namespace = {"check_gradients": check_gradients, "np": np}
    with pytest.raises(GradientCheckError, match="wrong in eager, graph modes"):
        exec(code, namespace)


def test_only_scans_the_gradients_named_and_refuses_a_name_the_target_lacks():
    report = scan("tests.bugzoo.zoo", only=["defun_cube"], modes=["graph"], order=1, examples=1)
    assert statuses(report) == {"defun_cube": "right"}
    with pytest.raises(OptionError, match=r"tests\.bugzoo\.zoo defines no gradient named "
                                          r"no_such_fn; it defines add_column_bias"):
        scan("tests.bugzoo.zoo", only=["no_such_fn"])


LAZY_PACKAGE = """
import sys
sys.path.insert(0, {examples!r})


def _load():
    import ops  # loads the op library inside a function: no module-level name holds it


_load()
import tensorflow as tf


@tf.RegisterGradient("CubeWithoutGradient")
def _cube_grad(op, dy):
    return dy * 3.0 * op.inputs[0] * op.inputs[0]
"""


def test_a_gradient_for_an_op_no_module_level_name_reaches_is_listed_with_what_to_do(tmp_path):
    # Its own process: registering a gradient for an example op changes the registry for good.
    (tmp_path / "lazy_ops.py").write_text(
        LAZY_PACKAGE.format(examples=str(ROOT / "examples" / "custom_ops")))
    result = subprocess.run(
        [sys.executable, "-c", "from gradcheck import scan; print(scan('lazy_ops'))"],
        cwd=tmp_path, capture_output=True, text=True, timeout=300,
        env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2", "PYTHONPATH": str(ROOT)})
    assert result.returncode == 0, result.stderr
    assert ("not scanned: CubeWithoutGradient: gradients of ops that exist, but no module-level "
            "name of the package holds the op library that defines them") in result.stdout
