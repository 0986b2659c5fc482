"""Build a TensorFlow custom-op library from C++ sources, once.

The shared object is cached under a key made of the sources, the flags, the
compiler and the TensorFlow version, so a second run (or a second pytest-xdist
worker) loads it without compiling. A compile error reaches the user with the
compiler's own message.
"""
import contextlib
import dataclasses
import errno
import fcntl
import hashlib
import os
import pathlib
import shlex
import shutil
import signal
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
    """Compile `sources` (a path to a .cc file, or a list of them) into a
    custom-op library and load it."""
    tf = _tf.tf()
    if isinstance(sources, (str, os.PathLike)):  # one file, not a string of file names
        sources = [sources]
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
        with _locked(target.parent):
            if not target.exists():  # another process may have built it meanwhile
                _remove_stale_builds(target.parent)
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
        _compile_all(jobs)
        partial = pathlib.Path(work) / target.name
        link = [compiler, "-shared", *map(str, objects), "-o", str(partial), *link_flags]
        result = subprocess.run(link, capture_output=True, text=True, check=False)
        if result.returncode:
            raise OpBuildError(f"linking {target.name} failed:\n{(result.stdout + result.stderr).strip()}"
                               f"\n\ncommand: {shlex.join(link)}")
        os.replace(partial, target)


def _compile_all(jobs):
    """Run the compilers in parallel; on any exit (an error, Ctrl-C) none is left
    running, so none writes into the build folder while it is removed."""
    running = []
    try:
        for source, command in jobs:
            # A group of its own: killing g++ alone would leave cc1plus and as running.
            running.append((source, command, subprocess.Popen(
                command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                start_new_session=True)))
        for source, command, process in running:
            output, _ = process.communicate()
            if process.returncode:
                raise OpBuildError(f"compiling {source.name} failed:\n{_errors_first(output)}\n\n"
                                   f"command: {shlex.join(command)}")
    finally:
        for _, _, process in running:
            _kill_group(process)


def _kill_group(process):
    if process.poll() is not None:  # g++ waits for its children: the group is gone
        return
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except ProcessLookupError:  # the compiler and its children have all exited
        pass
    process.wait()


def _remove_stale_builds(folder):
    """Build folders left by a process killed mid-compile (SIGKILL skips every
    cleanup). Called under the folder's lock, so no live build owns one."""
    for stale in folder.glob("tmp*"):
        shutil.rmtree(stale, ignore_errors=True)


def _errors_first(output, limit=200):
    """The compiler's error lines, then its whole output (cut at `limit` lines)."""
    lines = output.strip().splitlines()
    errors = [line for line in lines if "error" in line]
    shown = lines[:limit] + ([f"... ({len(lines) - limit} more lines)"] if len(lines) > limit else [])
    return "\n".join(errors + ["", "full compiler output:"] + shown)


@contextlib.contextmanager
def _locked(folder):
    """The cache entry's folder, created and locked: one build at a time."""
    try:
        folder.mkdir(parents=True, exist_ok=True)
        if not os.access(folder, os.W_OK | os.X_OK):  # the .lock may exist in a read-only folder
            raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), str(folder))
        handle = open(folder / ".lock", "w")
    except OSError as error:
        raise OpBuildError(
            f"cannot write the compiled op to the cache folder {str(folder)!r}: {error.strerror} "
            f"({error.filename}). Pass build_op_library(..., cache_dir=) a folder you can write, "
            "or set GRADCHECK_CACHE_DIR.") from None
    with handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)
