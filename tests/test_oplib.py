"""Building custom-op libraries: cached by content, errors in the compiler's words."""
import pathlib

import pytest

from gradcheck import OpBuildError, build_op_library

EXAMPLES = pathlib.Path(__file__).parent.parent / "examples" / "custom_ops"
SOURCES = [EXAMPLES / "cube_op.cc", EXAMPLES / "roll_and_sum_op.cc"]


def test_a_second_build_loads_the_cached_library_without_compiling():
    first = build_op_library(SOURCES, name="example_ops")
    second = build_op_library(SOURCES, name="example_ops")
    assert second.compiled is False
    assert second.path == first.path
    assert hasattr(second, "cube") and hasattr(second, "roll_and_sum")


def test_changed_sources_get_a_new_cache_entry(tmp_path):
    source = tmp_path / "broken_op.cc"
    source.write_text("first_mistake here;\n")
    with pytest.raises(OpBuildError) as first:
        build_op_library([source], cache_dir=tmp_path / "cache")
    source.write_text("second_mistake here;\n")
    with pytest.raises(OpBuildError) as second:
        build_op_library([source], cache_dir=tmp_path / "cache")
    assert "broken_op.cc:1:1: error" in str(first.value) and "first_mistake" in str(first.value)
    assert "second_mistake" in str(second.value)  # not the cached result of the first


@pytest.mark.slow
def test_a_compile_error_reaches_the_user_with_the_compilers_message(tmp_path):
    source = tmp_path / "typo_op.cc"
    source.write_text('#include "tensorflow/core/framework/op.h"\nREGISTER_OP("Typo").Input("x: float")\n')
    with pytest.raises(OpBuildError) as caught:
        build_op_library([source], cache_dir=tmp_path)
    message = str(caught.value)
    assert message.startswith("compiling typo_op.cc failed:")
    assert "typo_op.cc:2" in message and "error" in message
    assert "command: g++ -c" in message
    assert not list(tmp_path.glob("*/libtypo_op.so"))  # nothing half-built is cached


def test_a_missing_source_or_compiler_is_named(tmp_path):
    with pytest.raises(FileNotFoundError, match=r"no_such_op\.cc"):
        build_op_library([tmp_path / "no_such_op.cc"])
    source = tmp_path / "op.cc"
    source.write_text("\n")
    with pytest.raises(OpBuildError, match="the C\\+\\+ compiler 'no-such-g\\+\\+' is not installed"):
        build_op_library([source], compiler="no-such-g++", cache_dir=tmp_path)
