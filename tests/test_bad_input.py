"""Functions and inputs that cannot be checked get a clear error, never a pass."""
import subprocess
import sys

import numpy as np
import pytest
import tensorflow as tf
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from gradcheck import CheckSetupError, GradientCheckError, OptionError, check_gradients

X = np.array([0.5, 1.0, 1.5])


@pytest.mark.parametrize("fn, message", [
    (lambda x: None, "returned None"),
    (lambda x: 3.0, "returned a float as output, not a tensor"),
    (lambda x: (tf.sin(x), np.ones(3)), r"returned a ndarray as output\[1\]"),
    (lambda x: [], "empty structure"),
    (lambda x: tf.cast(x > 1, tf.int32), "no output of the function is floating-point"),
    (lambda x: tf.sparse.from_dense(x), "returned a SparseTensor as output: gradcheck "
     r"compares dense tensors\. Return tf\.sparse\.to_dense\(output\)"),
    (lambda x: (x, tf.RaggedTensor.from_row_lengths(x, [1, 2])),
     r"returned a RaggedTensor as output\[1\]: .* Return output\.to_tensor\(\)"),
])
def test_function_that_returns_no_usable_tensor(fn, message):
    with pytest.raises(CheckSetupError, match=message):
        check_gradients(fn, [X])


def test_non_finite_forward_names_the_element():
    with pytest.raises(CheckSetupError, match=r"not finite at output\[1\]"):
        check_gradients(tf.math.log, [np.array([1.0, -1.0])])


def test_random_forward_is_refused_as_nondeterministic():
    with pytest.raises(CheckSetupError, match="not deterministic"):
        check_gradients(lambda x: x * tf.random.uniform((3,), dtype=tf.float64), [X])


def test_no_differentiable_input():
    with pytest.raises(CheckSetupError, match="none of the inputs is floating-point"):
        check_gradients(lambda i: tf.cast(i, tf.float32) * 2.0, [np.array([1, 2])])


def test_function_that_raises_on_its_inputs():
    with pytest.raises(CheckSetupError, match="the function raised"):
        check_gradients(lambda x, y: x * y, [X, X.astype(np.float32)])


def test_op_with_no_gradient_at_all_fails_and_says_so():
    # MatrixLogarithm has no registered gradient in TensorFlow.
    fn = lambda a: tf.math.real(tf.linalg.logm(tf.cast(a, tf.complex128)))  # noqa: E731
    a = np.array([[2.0, 0.3], [0.1, 1.5]])
    with pytest.raises(GradientCheckError, match="no gradient is defined"):
        check_gradients(fn, [a], modes=["eager", "graph"])


@tf.custom_gradient
def returns_two_gradients_for_one_input(x):
    return 2.0 * x, lambda dy: (2.0 * dy, dy)


@tf.custom_gradient
def raises_in_its_gradient(x):
    def grad(dy):
        raise RuntimeError("the gradient blew up")
    return 2.0 * x, grad


@tf.custom_gradient
def gradient_of_wrong_shape(x):
    return tf.reduce_sum(x), lambda dy: dy


@tf.custom_gradient
def gradient_of_wrong_dtype(x):
    return 2.0 * x, lambda dy: tf.cast(2.0 * dy, tf.float64)


@pytest.mark.parametrize("fn, inputs, message", [
    (returns_two_gradients_for_one_input, [X], "expected to return 1 gradients, but returned 2"),
    (raises_in_its_gradient, [X], "the gradient blew up"),
    (gradient_of_wrong_shape, [X], r"gradient for input 'x' has shape \(\), but the input has shape \(3,\)"),
    (gradient_of_wrong_dtype, [X.astype(np.float32)], "has dtype float64, but the input is float32"),
])
def test_broken_gradient_function_fails_with_its_own_message(fn, inputs, message):
    with pytest.raises(GradientCheckError, match=message) as caught:
        check_gradients(fn, inputs, modes=["eager", "function"])
    assert str(caught.value).startswith("The gradient raised in eager mode")


def test_graph_only_failure_is_not_a_pass():
    report = check_gradients(raises_in_its_gradient, [X], modes=["graph"], raise_on_failure=False)
    assert not report.ok
    assert report.failed_modes[0].mode == "graph"


@pytest.mark.parametrize("kwargs, message", [
    ({"modes": ["eagre"]}, "unknown mode"),
    ({"method": "exact"}, "unknown method"),
    ({"method": "fast", "reference": lambda x, dy: dy}, "reference= needs the full Jacobian"),
    ({"order": 3}, "order must be 1 or 2"),
    ({"eps": 2.0}, "eps is a relative step"),
    ({"devices": ["GPU:7"]}, "is not available: TensorFlow sees"),
    ({"devices": ["toaster"]}, "toaster"),
])
def test_bad_options(kwargs, message):
    with pytest.raises(ValueError, match=message):
        check_gradients(tf.sin, [X], **kwargs)


def test_inputs_must_be_a_sequence():
    with pytest.raises(TypeError, match="For one argument, pass"):
        check_gradients(tf.sin, X)


def branches_on_values_in_python(x):
    if x.numpy().sum() > 0:  # works only eagerly
        return x * 2.0
    return -x


def test_mode_the_function_cannot_run_in_is_skipped_with_its_reason():
    report = check_gradients(branches_on_values_in_python, [X])
    assert report.ok
    status = {m.mode: m.status for m in report.modes}
    assert status == {"eager": "checked", "function": "skipped", "graph": "skipped", "xla": "skipped"}
    assert all("cannot run here" in m.reason for m in report.skipped_modes)
    assert "skipped: function mode on CPU:0" in str(report)


def test_graph_mode_of_a_function_using_an_eager_tensor_is_skipped_with_what_to_do():
    weights = tf.Variable(np.eye(3) * 0.5)

    def scaled(x):
        return tf.linalg.matvec(weights, x)

    report = check_gradients(scaled, [X], modes=["function", "graph"])
    graph = next(m for m in report.modes if m.mode == "graph")
    assert graph.status == "skipped"
    assert "created eagerly" in graph.reason and "pass it as an input" in graph.reason
    assert "Attempting to capture" not in graph.reason


def test_a_check_where_no_mode_runs_fails():
    with pytest.raises(GradientCheckError, match="No mode could run the check"):
        check_gradients(branches_on_values_in_python, [X], modes=["graph"])


def test_a_value_read_in_python_cuts_the_gradient_and_is_caught():
    def scales_by_its_first_element(x):
        return x * float(x.numpy()[0])  # the dependence on x[0] has no gradient

    with pytest.raises(GradientCheckError, match=r"d output\[\d\] / d x\[0\]"):
        check_gradients(scales_by_its_first_element, [X], modes=["eager"])


@tf.custom_gradient
def square_with_nan_gradient(x):
    return x * x, lambda dy: dy * tf.math.log(x - 10.0)  # log of a negative number: NaN


@tf.custom_gradient
def square_with_infinite_gradient(x):
    return x * x, lambda dy: dy * 2.0 * x / (x - x)


@pytest.mark.parametrize("fn, shown", [(square_with_nan_gradient, "is nan"),
                                       (square_with_infinite_gradient, "is inf")])
def test_a_non_finite_gradient_fails_in_every_mode_and_the_modes_agree(fn, shown):
    report = check_gradients(fn, [X], raise_on_failure=False)
    against_fd = {p.mode for p in report.failed_pairs if p.against == "finite differences"}
    assert against_fd == {"eager", "function", "graph", "xla"}
    # Every mode gets the same NaN or infinity: no mode is blamed for disagreeing.
    assert all(p.against == "finite differences" for p in report.failed_pairs)
    assert shown in report.failure_message().splitlines()[0]


def test_a_gradient_that_is_nan_in_one_mode_only_is_a_disagreement():
    @tf.custom_gradient
    def nan_in_graph_mode(x):
        def grad(dy):
            in_v1_graph = not tf.compat.v1.executing_eagerly_outside_functions()
            return dy * (np.nan if in_v1_graph else 2.0) * x
        return x * x, grad

    report = check_gradients(nan_in_graph_mode, [X], modes=["eager", "graph"], raise_on_failure=False)
    assert {(p.mode, p.against) for p in report.failed_pairs} == {
        ("graph", "finite differences"), ("graph", "eager on CPU:0")}


@settings(max_examples=15, deadline=None)
@given(hnp.arrays(np.float64, st.integers(1, 6),
                  elements=st.floats(allow_nan=True, allow_infinity=True, width=64)),
       st.integers(0, 5), st.sampled_from([np.nan, np.inf, -np.inf]))
def test_inputs_that_are_not_finite_are_refused_naming_the_first(x, at, bad):
    x[min(at, x.size - 1)] = bad  # at least one, drawn without filtering
    first = int(np.flatnonzero(~np.isfinite(x))[0])
    with pytest.raises(CheckSetupError, match=rf"input x\[{first}\] is -?(nan|inf)"):
        check_gradients(lambda x: x * 2.0, [x], modes=["eager"])


@settings(max_examples=10, deadline=None)
@given(st.sampled_from([None, 3, 2.5, "text", b"bytes", [], {}, (), object(), np.float64(1.0)]))
def test_outputs_that_are_not_tensors_are_refused(value):
    with pytest.raises(CheckSetupError, match="returned"):
        check_gradients(lambda x: value, [X], modes=["eager"])


@pytest.mark.parametrize("update", [
    lambda w: w.assign_add(1.0),  # two calls disagree
    lambda w: w.assign(3.0),  # two calls agree: caught as a change made by the first
], ids=["assign_add", "assign the same value"])
def test_a_function_that_updates_a_variable_it_reads_is_refused_and_the_variable_restored(update):
    w = tf.Variable(2.0, dtype=tf.float64, name="w")

    def updates_then_reads(x):
        update(w)
        return x * w

    with pytest.raises(CheckSetupError, match=r"changes its own state.*\bw\b.*assign_add"):
        check_gradients(updates_then_reads, [X])
    assert w.numpy() == 2.0


def test_variables_a_function_only_writes_are_restored_after_a_pass():
    w = tf.Variable(2.0, dtype=tf.float64, name="w")
    calls = tf.Variable(0, name="calls")

    def counts_calls(x):
        calls.assign_add(1)
        return x * w

    check_gradients(counts_calls, [X])
    assert calls.numpy() == 0 and w.numpy() == 2.0


def test_a_function_tf_function_cannot_trace_gets_its_variables_restored_after_its_first_call():
    """The documented limit: no trace, so the values from before the first call are unknown."""
    counter = tf.Variable(1.0, dtype=tf.float64, name="counter")

    def untraceable(x):
        counter.assign_add(1.0)
        return x * float(counter.numpy())

    with pytest.raises(CheckSetupError, match="changes its own state"):
        check_gradients(untraceable, [X], modes=["eager"])
    assert counter.numpy() == 2.0


def test_an_op_with_no_kernel_for_the_dtype_says_so():
    with pytest.raises(CheckSetupError, match="no kernel for Erfinv with dtype float16"):
        check_gradients(tf.math.erfinv, [X.astype(np.float16) / 4])


def test_a_jacobian_too_large_for_full_mode_is_refused_with_the_way_out():
    with pytest.raises(CheckSetupError, match=r"more than full mode holds.*method='fast'"):
        check_gradients(tf.sin, [np.zeros(5000)], method="full")
    assert check_gradients(tf.sin, [np.zeros(5000)], modes=["function"]).method == "fast"


@pytest.mark.parametrize("reference, message", [
    (lambda x: 2 * x, r"calling reference\(x, d_output\) failed"),
    (lambda x, dy: (2 * x * dy, dy), "returned 2 gradient"),
    (lambda x, dy: tf.zeros([5], tf.float64), r"shape \(5,\), but the input has shape \(3,\)"),
])
def test_a_reference_with_the_wrong_signature_is_refused(reference, message):
    with pytest.raises(CheckSetupError, match=message):
        check_gradients(lambda x: x * x, [X], reference=reference)


def test_without_tensorflow_the_error_says_how_to_install_it(tmp_path):
    script = tmp_path / "no_tensorflow.py"
    script.write_text(
        "import sys\n"
        "sys.modules['tensorflow'] = None  # as if it were not installed\n"
        "import gradcheck\n"
        "try:\n"
        "    gradcheck.check_gradients(lambda x: x, [[1.0]])\n"
        "except ImportError as error:\n"
        "    print(error)\n")
    printed = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                             check=True).stdout
    assert "TensorFlow 2.16 or newer" in printed
    assert "pip install 'gradcheck[cpu]'" in printed


@pytest.fixture
def functions_run_eagerly():
    tf.config.run_functions_eagerly(True)
    yield
    tf.config.run_functions_eagerly(False)


@pytest.mark.usefixtures("functions_run_eagerly")
def test_run_functions_eagerly_skips_the_traced_modes_instead_of_passing_them():
    report = check_gradients(tf.sin, [X], modes=["eager", "function", "xla"])
    status = {m.mode: (m.status, m.reason) for m in report.modes}
    assert status["eager"][0] == "checked"
    for mode in ("function", "xla"):
        assert status[mode][0] == "skipped"
        assert "run_functions_eagerly(True) is on" in status[mode][1]
    with pytest.raises(GradientCheckError, match="run_functions_eagerly"):
        check_gradients(tf.sin, [X], modes=["xla"], strict=True)


def _run_python(code):
    """`code` in a new Python process (for state that lasts the whole process)."""
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120)


def _check_inside_a_graph():
    with tf.Graph().as_default() as graph:
        with pytest.raises(CheckSetupError, match=r"inside a `with tf.Graph\(\).as_default\(\):`"):
            check_gradients(tf.sin, [X])
        assert graph.get_operations() == []  # nothing was added to the user's graph


def _check_inside_a_tf_function():
    @tf.function
    def inside():
        check_gradients(tf.sin, [X])
        return tf.constant(1.0)

    with pytest.raises(CheckSetupError, match=r"inside a tf\.function"):
        inside()


@pytest.mark.parametrize("where", [_check_inside_a_graph, _check_inside_a_tf_function])
def test_a_check_where_tensorflow_builds_a_graph_is_refused_touching_nothing(where):
    where()


@pytest.mark.slow
def test_a_check_after_disabling_eager_execution_is_refused():
    code = ("import numpy as np, tensorflow as tf\n"
            "from gradcheck import CheckSetupError, check_gradients\n"
            "tf.compat.v1.disable_eager_execution()\n"
            "graph = tf.compat.v1.get_default_graph()\n"
            "try:\n"
            "    check_gradients(tf.sin, [np.ones(3)])\n"
            "except CheckSetupError as error:\n"
            "    print(error, len(graph.get_operations()))\n")
    result = _run_python(code)
    assert "after tf.compat.v1.disable_eager_execution()" in result.stdout, result.stderr
    assert result.stdout.strip().endswith("graph. 0")


def test_an_override_for_an_op_type_the_function_never_creates_is_noted_and_strict_fails():
    report = check_gradients(tf.sin, [X], modes=["graph"], override_map={"NoSuchOp": "Square"})
    assert any("'NoSuchOp', an op type the function never creates" in n for n in report.notes)
    with pytest.raises(GradientCheckError, match="strict: override_map names NoSuchOp"):
        check_gradients(tf.sin, [X], modes=["graph"], override_map={"NoSuchOp": "Square"},
                        strict=True)
    used = check_gradients(tf.sin, [X], modes=["graph"], override_map={"Sin": "Sin"})
    assert not any("never creates" in n for n in used.notes)


@pytest.mark.parametrize("value, kind", [
    (lambda: tf.sparse.from_dense(tf.constant([[1.0, 0.0], [0.0, 2.0]], tf.float64)),
     "SparseTensor"),
    (lambda: tf.ragged.constant([[1.0, 2.0], [3.0]], dtype=tf.float64), "RaggedTensor"),
])
def test_sparse_and_ragged_inputs_are_named_with_the_dense_alternative(value, kind):
    with pytest.raises(OptionError, match=rf"input 's' is a {kind}: .* dense"):
        check_gradients(lambda s: s * 2.0, [value()])


def test_a_reference_that_returns_a_dict_is_told_what_to_return():
    with pytest.raises(CheckSetupError, match="the reference returned a dict as gradient 0"):
        check_gradients(tf.sin, [X], modes=["eager"],
                        reference=lambda x, dy: {"x": dy * tf.cos(x)})


def test_full_mode_refuses_an_input_too_large_for_it_before_calling_the_function():
    calls = []

    def counted(x):
        calls.append(1)
        return tf.sin(x)

    with pytest.raises(CheckSetupError, match=r"at least 1 x 20000000 real entries"):
        check_gradients(counted, [np.zeros(20_000_000, np.float32)], method="full")
    assert calls == []


@pytest.mark.slow
def test_a_check_that_cannot_fit_in_memory_is_refused_at_once_with_the_figure():
    # 10^8 float32 elements under an address-space limit 3 GB above what is in use.
    code = ("import resource, numpy as np, tensorflow as tf\n"
            "from gradcheck import CheckSetupError, check_gradients\n"
            "from gradcheck.numerics.footprint import _status_bytes\n"
            "x = np.zeros(10**8, np.float32)\n"
            "limit = _status_bytes('VmSize') + 3 * 10**9\n"
            "resource.setrlimit(resource.RLIMIT_AS, (limit, limit))\n"
            "try:\n"
            "    check_gradients(tf.sin, [x], method='fast')\n"
            "except CheckSetupError as error:\n"
            "    print(error)\n")
    result = _run_python(code)
    assert "100,000,000 real input components needs about 18.0 GB" in result.stdout, result.stderr
    assert "can get about 3.0 GB more (its address-space limit" in result.stdout


def sin_by_py_function(x):
    return tf.py_function(tf.sin, [x], tf.float64)


@tf.custom_gradient
def sin_with_doubled_gradient(t):
    return tf.sin(t), lambda dy: 2.0 * dy * tf.cos(t)


def test_a_py_function_is_checked_in_eager_mode_row_after_row():
    # A tape over a py_function answers one gradient call: each row gets a new tape.
    report = check_gradients(sin_by_py_function, [X], modes=["eager", "function", "graph"])
    assert {m.mode: m.status for m in report.modes} == dict.fromkeys(
        ["eager", "function", "graph"], "checked")


def test_a_wrong_gradient_inside_a_py_function_fails_in_eager_mode():
    fn = lambda x: tf.py_function(sin_with_doubled_gradient, [x], tf.float64)  # noqa: E731
    with pytest.raises(GradientCheckError) as caught:
        check_gradients(fn, [X], modes=["eager"])
    assert caught.value.report.modes[0].status == "checked"
    assert "pyfunc" not in str(caught.value)


def test_xla_mode_of_a_py_function_is_skipped_saying_why():
    report = check_gradients(sin_by_py_function, [X], modes=["eager", "xla"])
    xla = next(m for m in report.modes if m.mode == "xla")
    assert xla.status == "skipped"
    assert "tf.py_function" in xla.reason and "leave 'xla' out of modes" in xla.reason


def test_a_string_output_beside_a_float_one_is_left_out_with_a_note():
    report = check_gradients(lambda x: (tf.sin(x), tf.strings.as_string(x)), [X],
                             modes=["eager", "function"])
    assert report.ok
    assert {pair.output for pair in report.pairs} == {"output[0]"}
    assert any("output[1] (string) is not floating-point or complex" in n for n in report.notes)


def test_an_output_whose_shape_changes_at_a_perturbed_input_is_named():
    # round(1.4999 + h) is 2 for the steps taken: tf.unique finds one value more.
    fn = lambda x: tf.unique(tf.round(x)).y * 1.0  # noqa: E731
    with pytest.raises(CheckSetupError, match=r"output has shape \(1,\) at the inputs but "
                       r"\(2,\) at a perturbed input of the finite differences, x\[2\] \+ "):
        check_gradients(fn, [np.array([0.5001, 1.0, 1.4999])])


def below_one(x):
    # A control dependency: tf.vectorized_map drops an assertion nothing depends on.
    with tf.control_dependencies([tf.debugging.assert_less(x, tf.constant(1.0 + 1e-9, x.dtype))]):
        return 2.0 * x


def test_a_function_that_raises_at_a_perturbed_input_names_the_element_and_step():
    with pytest.raises(CheckSetupError, match=r"raised at a perturbed input of the finite "
                       r"differences, x\[2\] \+ [0-9.e-]+ \(the other inputs as given\): "
                       r"InvalidArgumentError: .*move it away from the edge, or pass a smaller eps"):
        check_gradients(below_one, [np.array([0.5, 0.7, 1.0])], modes=["eager"])


def test_a_perturbed_variable_at_which_the_function_raises_is_named():
    scale = tf.Variable(np.array([0.5, 1.0]), name="scale")
    fn = lambda x: x * below_one(scale)  # noqa: E731
    with pytest.raises(CheckSetupError, match=r"perturbed input .*, scale\[1\] \+ "):
        check_gradients(fn, [np.array([0.5, 0.7])], modes=["eager"])
    np.testing.assert_array_equal(scale.numpy(), [0.5, 1.0])
