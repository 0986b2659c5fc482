"""Every option is checked once, where the options are built: a value that
would pass a wrong gradient, or that the check cannot use, is refused with an
OptionError that names the option."""
import numpy as np
import pytest
import tensorflow as tf

from gradcheck import GradcheckError, OptionError, check_gradients

X = np.array([0.5, 1.0, 1.5])


@tf.custom_gradient
def fifty_times_too_large(x):
    return x * x, lambda dy: dy * 100.0 * x


@tf.custom_gradient
def one_percent_off(x):
    return x * x, lambda dy: dy * 2.02 * x


@pytest.mark.parametrize("option, value, message", [
    ("atol", -1.0, r"atol must be a finite number >= 0, got -1.0"),
    ("rtol", -1.0, r"rtol must be a finite number >= 0, got -1.0"),
    ("atol", float("nan"), r"atol must be a finite number >= 0, got nan"),
    ("rtol", float("inf"), r"rtol must be a finite number >= 0, got inf"),
    ("atol", {"float64": -1.0}, r"atol\['float64'\] must be a finite number >= 0"),
    ("atol", "x", r"atol must be a number .* got 'x'"),
    ("atol", {"float64": "x"}, r"atol\['float64'\] must be a number"),
    ("rtol", True, r"rtol must be a number"),
    ("atol", {"float99": 1.0}, r"atol has the key 'float99', which is not a floating or complex"),
    ("rtol", {np.int32: 1.0}, r"rtol has the key .*int32.*not a floating or complex"),
    # numpy reads 'float' as float64, TensorFlow's OpDefs as float32: not guessed.
    ("rtol", {"float": 1.0}, r"rtol has the key 'float', which is not a floating or complex"),
])
def test_a_tolerance_that_would_pass_anything_is_refused(option, value, message):
    with pytest.raises(OptionError, match=message):
        check_gradients(fifty_times_too_large, [X], modes=["eager"], **{option: value})


@pytest.mark.parametrize("key", ["float64", "f8", "double", np.float64, np.dtype("float64"),
                                 tf.float64],
                         ids=["name", "numpy code", "C name", "numpy type", "numpy dtype",
                              "tf dtype"])
def test_tolerance_dicts_take_any_dtype_like_key(key):
    with pytest.raises(GradcheckError):
        check_gradients(one_percent_off, [X], modes=["eager"])
    report = check_gradients(one_percent_off, [X], modes=["eager"], rtol={key: 0.05})
    assert report.ok


@pytest.mark.parametrize("options, message", [
    ({"order": 2.0}, r"order must be 1 or 2 \(an int\), got 2.0"),
    ({"order": "2"}, r"order must be 1 or 2"),
    ({"seed": "x"}, r"seed must be an integer >= 0, got 'x'"),
    ({"seed": -1}, r"seed must be an integer >= 0, got -1"),
    ({"seed": None}, r"seed must be an integer >= 0, got None"),
    ({"seed": 1.5}, r"seed must be an integer >= 0, got 1.5"),
    ({"eps": 1e-300}, r"eps=1e-300 is below float64's resolution"),
    ({"eps": "small"}, r"eps is a relative step and must be a number in \(0, 1\)"),
    ({"modes": 5}, r"modes must be a mode name or a list of them, got 5"),
    ({"modes": [5]}, r"unknown mode\(s\) \[5\]"),
    ({"devices": 5}, r"devices must be a device name .* got 5"),
    ({"devices": [5]}, r"devices must be a device name .* got \[5\]"),
    ({"method": ["fast"]}, r"unknown method \['fast'\]"),
    ({"method": "fast", "forward_mode": True}, r"forward_mode=True compares whole Jacobians"),
])
def test_an_option_of_the_wrong_kind_is_named(options, message):
    with pytest.raises(OptionError, match=message):
        check_gradients(tf.sin, [X], **options)


def test_option_errors_are_value_and_type_errors_as_python_raises_them():
    assert issubclass(OptionError, ValueError) and issubclass(OptionError, TypeError)


def test_numpy_scalars_are_numbers():
    assert check_gradients(tf.sin, [X], modes=["eager"], eps=np.float32(1e-3),
                           atol=np.float64(1e-6), seed=np.int64(3)).ok


def test_forward_mode_is_not_dropped_when_auto_would_pick_fast_mode():
    big = np.linspace(0.1, 1.0, 1100)
    with pytest.raises(OptionError, match=r"1,210,000 entries.*method='full'"):
        check_gradients(lambda x: tf.sin(x) * tf.reduce_sum(x), [big], modes=["eager"],
                        forward_mode=True)
