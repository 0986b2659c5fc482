"""Hypothesis chooses shapes, dtypes and values; failures shrink to the smallest case."""
import numpy as np
import pytest
import tensorflow as tf
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.errors import FailedHealthCheck, InvalidArgument, Unsatisfiable
from hypothesis.extra import numpy as hnp

from gradcheck import DeviceUnavailable, GradientCheckError, check_gradients, gradient_test
from gradcheck import strategies as gs

FIND = settings(max_examples=60, derandomize=True, database=None, deadline=None,
                suppress_health_check=list(HealthCheck))


@tf.custom_gradient
def add_with_a_broadcasting_bug(x, y):
    """Right only when the shapes match: y's gradient is not summed back."""
    def grad(dy):
        dy_y = dy if y.shape == dy.shape else tf.reshape(dy, [-1])[: tf.size(y)]
        return tf.reduce_sum(dy, axis=range(len(dy.shape) - len(x.shape))) if x.shape != dy.shape \
            else dy, tf.reshape(dy_y, tf.shape(y))
    return x + y, grad


def pair_of_broadcast_tensors(dtype="float64"):
    return gs.broadcastable_shapes(2, max_rank=2, max_side=3).flatmap(
        lambda shapes: st.tuples(gs.tensors(dtype, shapes[0]), gs.tensors(dtype, shapes[1])))


@pytest.mark.slow
def test_a_broadcasting_bug_is_found_and_shrunk_to_a_minimal_pair_of_shapes():
    @FIND
    @given(pair_of_broadcast_tensors())
    def test(pair):
        from gradcheck import check_gradients

        check_gradients(add_with_a_broadcasting_bug, list(pair), modes=["eager"])

    with pytest.raises(GradientCheckError) as caught:
        test()
    shapes = [eval(text.split(" ", 2)[2]) for text in caught.value.report.inputs]
    # Minimal: y has one element fewer than the output along a single axis.
    assert sum(int(np.prod(s)) for s in shapes) <= 3, shapes
    assert shapes[0] != shapes[1]


@tf.custom_gradient
def square_wrong_in_half_precision(x):
    def grad(dy):
        factor = 3.0 if x.dtype == tf.float16 else 2.0
        return dy * factor * x
    return x * x, grad


@pytest.mark.slow
def test_a_half_precision_only_bug_is_found_and_reported_with_a_reproduction():
    test = gradient_test(square_wrong_in_half_precision,
                         [gs.tensors(gs.dtypes(), gs.shapes(min_rank=1, max_rank=1, min_side=1),
                                     elements=gs.interval(0.5, 2.0))],
                         modes=["eager"], hypothesis_settings=FIND)
    with pytest.raises(GradientCheckError) as caught:
        test()
    message = str(caught.value)
    assert "float16" in caught.value.report.inputs[0]
    assert "Reproduce with:\n    check_gradients(square_wrong_in_half_precision, [np.array(" in message
    assert "dtype='float16')], modes=['eager'])" in message


@pytest.mark.slow
@pytest.mark.parametrize("fn", [tf.nn.relu, tf.abs, lambda x: tf.maximum(x, -x * 0.5)],
                         ids=["relu", "abs", "maximum"])
def test_correct_gradients_pass_with_kinks_in_the_generated_values(fn):
    kinks_seen = []

    def spy(x):
        kinks_seen.append(bool(np.any(np.asarray(x) == 0)))
        return fn(x)

    test = gradient_test(spy, [gs.tensors("float64", gs.shapes(min_rank=1, max_rank=2, min_side=1),
                                          elements=gs.interval(-1, 1, include=[0.0]))],
                         modes=["eager"], hypothesis_settings=FIND)
    test()
    assert any(kinks_seen)


@pytest.mark.slow
def test_an_example_that_is_mostly_kinks_is_rejected_not_failed():
    test = gradient_test(tf.abs, [gs.tensors("float64", (3,), elements=gs.interval(-1, 1, include=[0.0]))],
                         modes=["eager"], max_kink_fraction=0.0, hypothesis_settings=FIND)
    test()  # passes: examples with any kink are rejected


@tf.custom_gradient
def abs_with_slope_two_at_zero(x):
    return tf.abs(x), lambda dy: dy * tf.where(x == 0, tf.constant(2.0, x.dtype), tf.sign(x))


@pytest.mark.slow
def test_a_gradient_wrong_at_kinks_fails_however_many_kinks_the_example_has():
    # Rejecting such an example (as a passing one with mostly kinks is) would hide the bug.
    test = gradient_test(abs_with_slope_two_at_zero,
                         [gs.tensors("float64", (3,), elements=gs.interval(-1, 1, include=[0.0]))],
                         modes=["eager"], max_kink_fraction=0.0, hypothesis_settings=FIND)
    with pytest.raises(GradientCheckError, match="one-sided differences run from -1 to 1"):
        test()


def test_empty_tensors_are_generated_and_handled():
    sizes = []

    def spy(x):
        sizes.append(int(np.prod(x.shape)))
        return tf.sin(x) * 2.0

    gradient_test(spy, [gs.tensors("float32", gs.shapes(max_rank=2))], modes=["function"],
                  hypothesis_settings=FIND)()
    assert 0 in sizes


def test_plain_given_with_the_gradcheck_fixture(gradcheck):
    @settings(max_examples=10, deadline=None)
    @given(gs.tensors(gs.dtypes(only=["float32", "float64"]), gs.shapes(max_rank=2),
                      elements=gs.positive()))
    def check(x):
        gradcheck(tf.math.log, [x], modes=["function"])

    check()


@pytest.mark.parametrize("make, message", [
    (lambda: gs.shapes(min_rank=3, max_rank=1), "min_rank=3 is larger than max_rank=1"),
    (lambda: gs.shapes(min_side=-1), "min_side must be a non-negative integer"),
    (lambda: gs.shapes(min_rank=3, min_side=5, max_side=5, max_size=10), "no shape of rank >= 3"),
    (lambda: gs.interval(2, 1), "low=2 must be smaller than high=1"),
    (lambda: gs.interval(-1e6, 1), "where every dtype (float16 included) is safe"),
    (lambda: gs.positive(0), "positive() needs low > 0"),
    (lambda: gs.dtypes(floating=False), "no dtype left to draw"),
    (lambda: gs.dtypes(only=["float8"]), "unknown dtypes ['float8']"),
    (lambda: gs.broadcastable_shapes(0), "num_shapes must be a positive integer"),
    (lambda: gs.tensors("float32", (2,), elements=(0, 1)),
     "or a Hypothesis strategy such as st.floats(-1, 1), got (0, 1)"),
    (lambda: gs.dtypes(only="float8"), "only='float8' names unknown dtypes ['float8']"),
    (lambda: gs.dtypes(exclude=["float8", np.float16]), "exclude=['float8', <class 'numpy.float16'>] "
                                                       "names unknown dtypes ['float8']"),
    (lambda: gs.dtypes(exclude=np.int32), "names unknown dtypes [<class 'numpy.int32'>]"),
    (lambda: gs.dtypes(device="CPU:0"), "device='CPU:0' is where fn's kernels are tried; pass fn="),
    (lambda: gs.dtypes(fn=tf.sin, device="not a device"), "device='not a device': "),
    (lambda: gs.dtypes(fn=tf.sin, device="CPU:0,CPU:1"), "device must name one device"),
    (lambda: gs.dtypes(fn="sin"), "fn must be a function"),
    (lambda: gs.interval(0, 1, margin=float("nan")), "margin must be a finite number, got nan"),
    (lambda: gs.interval(0, 1, margin=float("inf")), "margin must be a finite number, got inf"),
    (lambda: gs.interval(0, 1, margin=-0.1), "margin must be positive, got -0.1"),
    (lambda: gs.interval(0, 1, include=["a"]), "include=['a']: 'a' is not a finite number"),
    (lambda: gs.interval(0, 1, avoid=["a"]), "avoid=['a']: 'a' is not a finite number"),
    (lambda: gs.interval(0, 1, avoid=[float("nan")]), "avoid=[nan]: nan is not a finite number"),
    (lambda: gs.interval(0, 1, include="a"), "include must be a number or a list of numbers"),
    (lambda: gs.interval(0, 1, include=np.float32(2)), "include=np.float32(2.0): 2 is outside [0, 1]"),
    (lambda: gs.interval(True, 2), "low must be a finite number, got True"),
    (lambda: gs.positive(np.float32(0)), "positive() needs low > 0"),
    (lambda: gs.tensors("int32", (2,)), "dtype='int32' is not a dtype these strategies draw"),
    (lambda: gs.tensors(None, (2,)), "dtype=None is not a dtype these strategies draw"),
    (lambda: gs.tensors(["float32"], (2,)), "or a strategy such as dtypes()"),
    (lambda: gs.tensors("float32", None), "shape must be a tuple of sides such as (2, 3), or a "
                                          "strategy such as shapes(), got None"),
    (lambda: gs.tensors("float32", (-1,)), "shape=(-1,) has a side that is not an integer >= 0"),
    (lambda: gs.tensors("float32", (2.5,)), "shape=(2.5,) has a side that is not an integer >= 0"),
    (lambda: gs.tensors("float32", (3, 2), gs.well_conditioned()), "needs square matrices"),
])
def test_bad_arguments_get_precise_messages(make, message):
    with pytest.raises(InvalidArgument, match=re_escape(message)):
        make()


def re_escape(text):
    import re

    return re.escape(text)


@settings(max_examples=30, deadline=None)
@given(gs.tensors(gs.dtypes(complex=True), gs.shapes(max_rank=2), elements=gs.nonzero()))
def test_domains_hold_in_every_dtype(x):
    values = np.asarray(tf.cast(x, tf.complex128) if np.iscomplexobj(x) else tf.cast(x, tf.float64))
    assert np.all(np.isfinite(values))
    parts = [values.real, values.imag] if np.iscomplexobj(values) else [values]
    assert all(np.all(np.abs(p) >= 0.09) for p in parts)


@settings(max_examples=20, deadline=None)
@given(gs.tensors("float64", gs.shapes(min_rank=2, max_rank=2, min_side=2).filter(
    lambda s: s[0] == s[1]), elements=gs.well_conditioned()))
def test_well_conditioned_matrices_are_well_conditioned(a):
    assert np.linalg.cond(a) < 10


@pytest.mark.parametrize("dtype", ["float16", "float32", "complex64", "float64"])
def test_distinct_values_in_narrow_dtypes_are_drawn_without_filtering_most_away(dtype):
    # Distinct float64s round to one float32 often enough that 24 of them
    # failed Hypothesis's filter health check most of the time.
    @settings(max_examples=30, deadline=None, database=None)
    @given(gs.tensors(dtype, (2, 2, 2, 3), gs.interval(-0.3, 2.1), distinct=True))
    def draw(x):
        flat = np.concatenate([x.real.ravel(), x.imag.ravel()]) if np.iscomplexobj(x) else x.ravel()
        assert len(np.unique(x.ravel())) == x.size
        assert np.all((flat >= -0.3) & (flat <= 2.1))

    draw()


def test_dtypes_can_be_filtered_to_the_kernels_a_function_has():
    # tf.math.lgamma has no complex kernel.
    drawn = set()

    @settings(max_examples=40, deadline=None, database=None)
    @given(gs.dtypes(complex=True, fn=tf.math.lgamma))
    def collect(dtype):
        drawn.add(dtype)

    collect()
    assert drawn and not drawn & {"complex64", "complex128"}


def drawn_by(strategy, max_examples=60):
    """Every value `strategy` draws over `max_examples` examples."""
    drawn = []

    @settings(max_examples=max_examples, deadline=None, database=None)
    @given(strategy)
    def collect(value):
        drawn.append(value)

    collect()
    return drawn


@pytest.mark.parametrize("exclude", [[np.float16], [tf.float16], "float16", np.dtype("float16"),
                                     tf.float16, ("float16", np.float32)],
                         ids=["numpy type", "tf dtype", "name", "numpy dtype", "one tf dtype", "two"])
def test_exclude_takes_any_dtype_like_and_never_draws_it(exclude):
    drawn = set(drawn_by(gs.dtypes(exclude=exclude)))
    expected = {"bfloat16", "float32", "float64"} - ({"float32"} if isinstance(exclude, tuple) else set())
    assert drawn == expected


@pytest.mark.parametrize("only, expected", [
    (np.float64, {"float64"}), ("float64", {"float64"}), (tf.float64, {"float64"}),
    (np.dtype("complex64"), {"complex64"}), ([tf.bfloat16, "float32"], {"bfloat16", "float32"}),
])
def test_only_takes_one_dtype_like_or_a_list(only, expected):
    assert set(drawn_by(gs.dtypes(only=only))) == expected


@pytest.mark.parametrize("dtype, expected", [
    (tf.float64, "float64"), (np.dtype("float64"), "float64"), (np.float64, "float64"),
    (float, "float64"), ("f4", "float32"), ("half", "float16"), (tf.bfloat16, "bfloat16"),
    (st.just(tf.complex64), "complex64"),
    (st.sampled_from([np.float16, tf.float32]), "float16 float32"),
])
def test_tensors_take_any_dtype_like(dtype, expected):
    arrays = drawn_by(gs.tensors(dtype, (2, 3)), max_examples=20)
    assert {a.dtype.name for a in arrays} == set(expected.split())
    assert {a.shape for a in arrays} == {(2, 3)}


def test_a_shape_drawn_with_a_negative_side_is_refused_when_drawn():
    with pytest.raises(InvalidArgument, match=re_escape("shape=(2, -1) has a side that is not")):
        drawn_by(gs.tensors("float32", st.just((2, -1))), max_examples=1)


def test_an_int_shape_is_one_axis():
    assert {a.shape for a in drawn_by(gs.tensors("float32", np.int64(3)), max_examples=5)} == {(3,)}


def test_numpy_scalars_are_numbers_in_intervals():
    domain = gs.interval(np.float32(0), np.int64(1), margin=np.float64(0.1),
                         avoid=np.float16(0.5), include=[np.float32(0.25)])
    assert domain == gs.interval(0.0, 1.0, margin=0.1, avoid=[0.5], include=[0.25])
    values = np.concatenate([a.ravel() for a in drawn_by(gs.tensors("float64", (4,), domain))])
    assert np.all((values >= 0) & (values <= 1)) and 0.25 in values
    assert np.all(np.abs(values - 0.5) >= 0.1 - 1e-12)  # 0.5 - 0.1 - 0.5 rounds below 0.1


@pytest.mark.parametrize("device", ["GPU:0", "CPU:7"])
def test_a_device_tensorflow_does_not_see_is_refused_not_soft_placed(device):
    if tf.config.list_logical_devices(device.split(":")[0]) and device == "GPU:0":
        pytest.skip("TensorFlow sees a GPU here")
    with pytest.raises(DeviceUnavailable, match=re_escape(f"dtypes(device={device!r}) cannot try "
                                                          "fn's kernels there: device")):
        gs.dtypes(fn=tf.sin, device=device)


@pytest.mark.parametrize("soft", [True, False])
def test_kernels_are_tried_on_the_device_with_soft_placement_off_then_restored(cpu_devices, soft):
    seen = []

    def spy(x):
        y = tf.sin(x)
        seen.append((y.device, tf.config.get_soft_device_placement()))
        return y

    tf.config.set_soft_device_placement(soft)
    try:
        drawn = set(drawn_by(gs.dtypes(only=["float32", "float64"], fn=spy, device="cpu:1")))
        assert tf.config.get_soft_device_placement() is soft
    finally:
        tf.config.set_soft_device_placement(True)
    assert drawn == {"float32", "float64"}
    assert {s for _, s in seen} == {False}
    assert {d.rsplit("/", 1)[-1] for d, _ in seen} == {"device:CPU:1"}


def on_a_missing_gpu(x):
    with tf.device("/GPU:0"):  # soft placement would run this on the CPU
        return tf.sin(x)


@pytest.mark.skipif(bool(tf.config.list_logical_devices("GPU")), reason="TensorFlow sees a GPU here")
def test_a_function_whose_kernels_soft_placement_would_move_has_no_dtypes():
    with pytest.raises((Unsatisfiable, FailedHealthCheck)):
        drawn_by(gs.dtypes(fn=on_a_missing_gpu), max_examples=5)


@pytest.mark.parametrize("args", ["notalist", gs.tensors("float64", (2,))], ids=["str", "strategy"])
def test_gradient_test_refuses_args_that_are_not_a_list(args):
    with pytest.raises(TypeError, match="gradient_test's args must be a list or tuple with one "
                                        r"strategy \(or value\) per argument of fn, got"):
        gradient_test(tf.sin, args)


@pytest.mark.parametrize("dtype, elements", [
    (np.float64, st.floats(-1, 1)), ("float32", st.floats(-1, 1, width=32)),
    (tf.bfloat16, st.floats(-1, 1, width=32)),
    ("complex128", st.complex_numbers(max_magnitude=1, allow_nan=False, allow_infinity=False))])
def test_elements_take_a_hypothesis_strategy(dtype, elements):
    @settings(max_examples=10, database=None)
    @given(gs.tensors(dtype, (3,), elements=elements))
    def test(x):
        assert x.dtype == tf.as_dtype(dtype).as_numpy_dtype and x.shape == (3,)
        assert np.all(np.abs(x.astype(np.complex128)) <= 1.01)

    test()


@settings(max_examples=5, database=None, deadline=None)
@given(hnp.arrays(np.float64, (3,), elements=st.floats(-1, 1)))
def test_arrays_drawn_by_hypothesis_numpy_are_inputs_as_they_are(x):
    assert check_gradients(tf.sin, [x], modes=["eager"]).ok


def test_gradient_test_takes_hypothesis_numpy_arrays():
    gradient_test(tf.tanh, [hnp.arrays(np.float32, (2,), elements=st.floats(-1, 1, width=32))],
                  modes=["eager"], hypothesis_settings=settings(max_examples=5, deadline=None,
                                                                database=None))()
