"""Build a TensorFlow custom-op library from C++ sources, once.

The shared object is cached under a key made of the sources, the flags, the
compiler and the TensorFlow version, so a second run (or a second pytest-xdist
worker) loads it without compiling. A compile error reaches the user with the
compiler's own message.
"""
import contextlib
import dataclasses
import fcntl
import hashlib
import os
import pathlib
import shlex
import subprocess
import tempfile

from gradcheck import _tf
from gradcheck.errors import OpBuildError


@dataclasses.dataclass
class OpLibrary:
    module: object  # what tf.load_op_library returned: one Python function per op
    path: pathlib.Path
    compiled: bool  # False when the cached library was loaded

    def __getattr__(self, name):
        return getattr(self.module, name)


_loaded = {}


def default_cache_dir():
    configured = os.environ.get("GRADCHECK_CACHE_DIR")
    if configured:
        return pathlib.Path(configured)
    cache_home = pathlib.Path(os.environ.get("XDG_CACHE_HOME", pathlib.Path.home() / ".cache"))
    return cache_home / "gradcheck" / "ops"


def build_op_library(sources, name=None, *, extra_flags=(), cache_dir=None, compiler=None):
    """Compile `sources` (paths to .cc files) into a custom-op library and load it."""
    tf = _tf.tf()
    sources = [pathlib.Path(s).resolve() for s in sources]
    missing = [str(s) for s in sources if not s.is_file()]
    if not sources or missing:
        raise FileNotFoundError(f"no such C++ source file: {', '.join(missing) or '(none given)'}")
    name = name or sources[0].stem
    compiler = compiler or os.environ.get("CXX", "g++")
    # TensorFlow's headers deprecate much of themselves: without this a real
    # error drowns in hundreds of lines of warnings.
    compile_flags = [*tf.sysconfig.get_compile_flags(), "-fPIC", "-O2",
                     "-Wno-deprecated-declarations", *extra_flags]
    link_flags = tf.sysconfig.get_link_flags()
    key = _cache_key(sources, compiler, compile_flags, link_flags, tf.__version__)
    target = pathlib.Path(cache_dir or default_cache_dir()) / f"{name}-{key[:16]}" / f"lib{name}.so"
    compiled = False
    if not target.exists():
        target.parent.mkdir(parents=True, exist_ok=True)
        with _locked(target.parent / ".lock"):
            if not target.exists():  # another process may have built it meanwhile
                _compile(sources, target, compiler, compile_flags, link_flags)
                compiled = True
    if target not in _loaded:
        _loaded[target] = tf.load_op_library(str(target))
    return OpLibrary(module=_loaded[target], path=target, compiled=compiled)


def _cache_key(sources, compiler, compile_flags, link_flags, tf_version):
    digest = hashlib.sha256()
    for part in [compiler, _compiler_version(compiler), tf_version, *compile_flags, *link_flags]:
        digest.update(part.encode() + b"\0")
    for source in sources:
        digest.update(source.name.encode() + b"\0" + source.read_bytes() + b"\0")
    return digest.hexdigest()


def _compiler_version(compiler):
    try:
        result = subprocess.run([compiler, "--version"], capture_output=True, text=True, check=False)
    except FileNotFoundError:
        raise OpBuildError(f"the C++ compiler {compiler!r} is not installed (set CXX to another "
                           "compiler, or install g++).") from None
    return result.stdout


def _compile(sources, target, compiler, compile_flags, link_flags):
    """One compiler process per source, in parallel, then one link."""
    with tempfile.TemporaryDirectory(dir=target.parent) as work:
        objects = [pathlib.Path(work) / f"{i}-{s.stem}.o" for i, s in enumerate(sources)]
        jobs = [
            (source, [compiler, "-c", str(source), "-o", str(obj), *compile_flags])
            for source, obj in zip(sources, objects)
        ]
        running = [(source, command, subprocess.Popen(command, stdout=subprocess.PIPE,
                                                      stderr=subprocess.STDOUT, text=True))
                   for source, command in jobs]
        for source, command, process in running:
            output, _ = process.communicate()
            if process.returncode:
                raise OpBuildError(f"compiling {source.name} failed:\n{_errors_first(output)}\n\n"
                                   f"command: {shlex.join(command)}")
        partial = pathlib.Path(work) / target.name
        link = [compiler, "-shared", *map(str, objects), "-o", str(partial), *link_flags]
        result = subprocess.run(link, capture_output=True, text=True, check=False)
        if result.returncode:
            raise OpBuildError(f"linking {target.name} failed:\n{(result.stdout + result.stderr).strip()}"
                               f"\n\ncommand: {shlex.join(link)}")
        os.replace(partial, target)


def _errors_first(output, limit=200):
    """The compiler's error lines, then its whole output (cut at `limit` lines)."""
    lines = output.strip().splitlines()
    errors = [line for line in lines if "error" in line]
    shown = lines[:limit] + ([f"... ({len(lines) - limit} more lines)"] if len(lines) > limit else [])
    return "\n".join(errors + ["", "full compiler output:"] + shown)


@contextlib.contextmanager
def _locked(path):
    with open(path, "w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)
