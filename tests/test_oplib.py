"""Building custom-op libraries: cached by content, errors in the compiler's words."""
import os
import pathlib
import signal
import subprocess
import sys
import time

import pytest

import gradcheck
from gradcheck import OpBuildError, build_op_library

GRADCHECK_ROOT = pathlib.Path(gradcheck.__file__).resolve().parents[1]

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


def test_a_single_source_path_is_one_file_not_a_list_of_characters(tmp_path):
    source = tmp_path / "single_op.cc"
    source.write_text("single_mistake here;\n")
    for given in (str(source), source):
        with pytest.raises(OpBuildError, match=r"^compiling single_op\.cc failed:"):
            build_op_library(given, cache_dir=tmp_path / "cache")


@pytest.mark.parametrize("cache", ["a_file", "a_file/below"])
def test_a_cache_path_through_a_file_is_an_op_build_error_naming_it(tmp_path, cache):
    (tmp_path / "a_file").write_text("")
    source = tmp_path / "op.cc"
    source.write_text("\n")
    with pytest.raises(OpBuildError, match="cannot write the compiled op to the cache folder "
                                           rf"'{tmp_path}/a_file/.*Not a directory.*GRADCHECK_CACHE_DIR"):
        build_op_library(source, cache_dir=tmp_path / cache)


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into read-only folders")
def test_a_read_only_cache_is_an_op_build_error_naming_it(tmp_path):
    source = tmp_path / "op.cc"
    source.write_text("\n")
    cache = tmp_path / "cache"
    cache.mkdir(mode=0o500)
    try:
        with pytest.raises(OpBuildError, match=rf"cache folder '{cache}/.*Permission denied.*cache_dir="):
            build_op_library(source, cache_dir=cache)
    finally:
        cache.chmod(0o700)


def test_a_failed_build_leaves_no_build_folder_and_clears_those_of_killed_builds(tmp_path):
    source = tmp_path / "broken_op.cc"
    source.write_text("a_mistake here;\n")
    with pytest.raises(OpBuildError):
        build_op_library(source, cache_dir=tmp_path / "cache")
    (entry,) = (tmp_path / "cache").iterdir()
    assert not list(entry.glob("tmp*"))
    (entry / "tmp_of_a_killed_build").mkdir()  # what a SIGKILLed build leaves
    (entry / "tmp_of_a_killed_build" / "0-broken_op.o").write_text("")
    with pytest.raises(OpBuildError):
        build_op_library(source, cache_dir=tmp_path / "cache")
    assert not list(entry.glob("tmp*"))


INTERRUPTED_BUILD = """
import sys
from gradcheck import build_op_library
try:
    build_op_library(sys.argv[1], cache_dir=sys.argv[2])
except KeyboardInterrupt:
    sys.exit(130)
"""


@pytest.mark.slow
def test_ctrl_c_mid_compile_leaves_no_build_folder(tmp_path):
    cache = tmp_path / "cache"
    script = tmp_path / "build.py"
    script.write_text(INTERRUPTED_BUILD)
    env = {**os.environ, "PYTHONPATH": str(GRADCHECK_ROOT), "TF_CPP_MIN_LOG_LEVEL": "2"}
    build = subprocess.Popen([sys.executable, str(script), str(SOURCES[0]), str(cache)], env=env)
    deadline = time.monotonic() + 120
    while not list(cache.glob("*/tmp*/")) and build.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    assert build.poll() is None, "the build ended before it could be interrupted"
    time.sleep(0.5)  # the compiler is running
    build.send_signal(signal.SIGINT)
    assert build.wait(timeout=60) == 130
    assert list(cache.glob("*/.lock")) and not list(cache.glob("*/tmp*"))
    assert not _processes_mentioning(str(cache))  # no compiler left writing into the cache


def _processes_mentioning(text):
    found = []
    for cmdline in pathlib.Path("/proc").glob("[0-9]*/cmdline"):
        try:
            if text.encode() in cmdline.read_bytes():
                found.append(cmdline.parent.name)
        except OSError:  # the process ended meanwhile
            pass
    return found
