"""What a scan target defines: the op types of a compiled op library, or of
the op libraries a Python package loads, with the gradient registered for
each; the Defuns with their own gradient and the public tf.custom_gradient
functions a package defines; and the gradients it registers under names no
op has."""
import dataclasses
import os
import pathlib
import sys

from gradcheck import _tf
from gradcheck.errors import OptionError
from gradcheck.testing import coverage

REGISTERED, NO_GRADIENT, MISSING = "registered", "tf.no_gradient", "missing"
OP, CUSTOM_GRADIENT, DEFUN = "op", "tf.custom_gradient", "Defun"  # what a ScannedGradient is
MODULE_HINTS = "GRADCHECK_SCAN_HINTS"  # a module's input hints (hints.py)


@dataclasses.dataclass(frozen=True)
class ScannedGradient:
    name: str  # the op type; for a Python function, its name in the target ('layers.swish')
    call: object  # an op's raw-ops style function (keywords, one per input and attr); or the function
    gradient: str  # REGISTERED, NO_GRADIENT or MISSING
    origin: str  # 'gradient registered by pkg.ops._cube_grad', or where the op came from
    source: str  # how a user reaches `call`: 'tf.raw_ops.Sin', 'pkg.ops.library.Cube'
    kind: str = OP  # OP, CUSTOM_GRADIENT or DEFUN


@dataclasses.dataclass(frozen=True)
class Target:
    name: str
    ops: tuple  # ScannedGradient of ops, in op type order, then of functions, by name
    override_only: tuple = ()  # gradients registered under a name no op has
    hints: tuple = ()  # (module name, its GRADCHECK_SCAN_HINTS dict)
    unreachable: tuple = ()  # gradients of ops no module-level name of the package reaches


def find_target(target):
    """The Target named by `target`: a path to a .so, or an importable module
    or package (a path to a .py file works too)."""
    if not isinstance(target, str) or not target.strip():
        raise OptionError(f"a scan target is a module name or a path to a .so or .py file, "
                          f"got {target!r}.")
    if target.endswith(".so"):
        return _library_target(target)
    return _package_target(target)


def _library_target(path):
    if not os.path.isfile(path):
        raise OptionError(f"no such op library: {path}. Give the path of a .so built for this "
                          "TensorFlow (tf.load_op_library loads it).")
    try:
        library = _tf.tf().load_op_library(os.path.abspath(path))
    except Exception as error:  # noqa: BLE001  (whatever the loader says is the reason)
        raise OptionError(f"tf.load_op_library cannot load {path}: {error}") from None
    ops = _ops_of(library, f"op library {pathlib.Path(path).name}",
                  f"tf.load_op_library({os.path.abspath(path)!r})")
    if not ops:
        # TensorFlow makes functions only for the ops a library registers anew.
        raise OptionError(f"{path} defines no op TensorFlow had not registered already: another "
                          "library with the same ops (a second build of the same sources?) was "
                          "loaded first in this process, or it defines none. Scan the library "
                          "that was loaded first, or the package that loads it.")
    return Target(path, tuple(sorted(ops.values(), key=lambda op: op.name)))


def _package_target(name):
    modules = _import_all(name)
    package = modules[0].__name__
    ops = {}
    for module in modules:
        for attribute, value in list(vars(module).items()):
            library = getattr(value, "module", value)  # gradcheck's OpLibrary wraps the module
            if _is_op_library(library):
                ops.update(_ops_of(library, f"op library loaded by {module.__name__}",
                                   f"{module.__name__}.{attribute}"))
    override_only, unreachable = _add_registered_gradients(ops, package)
    functions = {}
    for module in modules:
        functions.update(_functions_of(module, package))
    hints = tuple((m.__name__, vars(m)[MODULE_HINTS]) for m in modules if MODULE_HINTS in vars(m))
    return Target(name, (*sorted(ops.values(), key=lambda op: op.name),
                         *sorted(functions.values(), key=lambda f: f.name)),
                  tuple(sorted(override_only)), hints, tuple(sorted(unreachable)))


def _add_registered_gradients(ops, package):
    """Give `ops` the gradients `package` registers, adding TensorFlow's ops it
    registers gradients for; ([names no op has], [ops no module-level name reaches])."""
    registry, raw = _tf.gradient_registry(), _tf.tf().raw_ops
    override_only, unreachable = [], []
    for op_type in registry.list():
        gradient = registry.lookup(op_type)
        module = getattr(gradient, "__module__", "") or ""
        if gradient is None or not coverage.inside(module, package):
            continue
        origin = f"gradient registered by {module}.{gradient.__name__}"
        if op_type in ops:
            ops[op_type] = dataclasses.replace(ops[op_type], origin=origin)
        elif _tf.op_def(op_type) is None:
            override_only.append(op_type)
        elif hasattr(raw, op_type):
            ops[op_type] = ScannedGradient(op_type, getattr(raw, op_type), REGISTERED, origin,
                                           f"tf.raw_ops.{op_type}")
        else:
            unreachable.append(op_type)
    return override_only, unreachable


def _functions_of(module, package):
    """{name: ScannedGradient} of the Defuns with their own gradient and the
    public tf.custom_gradient functions `module` defines (not imports)."""
    found = {}
    for attribute, value in list(vars(module).items()):
        kind = _function_kind(value, attribute)
        if kind is None or _defined_in(value, kind) != module.__name__:
            continue
        name = f"{module.__name__}.{attribute}"
        short = name[len(package) + 1:] if name.startswith(package + ".") else attribute
        found[short] = ScannedGradient(short, value, REGISTERED, f"{kind} {name}", name, kind)
    return found


def _function_kind(value, attribute):
    if _tf.is_defun(value) and (getattr(value, "grad_func_name", None)
                                or getattr(value, "python_grad_func", None)):
        return DEFUN  # a Defun's own gradient is its point, public or not
    if _tf.is_custom_gradient(value) and not attribute.startswith("_"):
        return CUSTOM_GRADIENT
    return None


def _defined_in(value, kind):
    function = getattr(value, "_func", None) if kind == DEFUN else value
    return getattr(function, "__module__", None)


def raw_ops(op_types):
    """A Target of TensorFlow's own ops, by op type, as tf.raw_ops has them."""
    tf = _tf.tf()
    unknown = [t for t in op_types if not hasattr(tf.raw_ops, t)]
    if unknown:
        raise OptionError(f"tf.raw_ops has no op {', '.join(unknown)}; op types are spelled "
                          "as in tf.raw_ops (Sin, MatMul, BiasAdd).")
    ops = []
    for op_type in op_types:
        _, status = _gradient_of(op_type)
        ops.append(ScannedGradient(op_type, getattr(tf.raw_ops, op_type), status,
                             "TensorFlow's gradient", f"tf.raw_ops.{op_type}"))
    return Target("tf.raw_ops", tuple(ops))


def _ops_of(library, origin, source):
    """{op type: ScannedOp} for the ops a loaded library module defines."""
    found = {}
    for name in dir(library):
        value = getattr(library, name)
        # The library's own op functions, not names it imports (typing.Any is an op type too).
        if (not name[:1].isupper() or getattr(value, "__module__", None) != library.__name__
                or _tf.op_def(name) is None):
            continue
        gradient, status = _gradient_of(name)
        where = (f"gradient registered by {gradient.__module__}.{gradient.__name__}"
                 if gradient is not None else origin)
        found[name] = ScannedGradient(name, value, status, where, f"{source}.{name}")
    return found


def _gradient_of(op_type):
    """(the registered gradient function or None, REGISTERED / NO_GRADIENT / MISSING)."""
    try:
        gradient = _tf.gradient_registry().lookup(op_type)
    except LookupError:
        return None, MISSING
    return gradient, REGISTERED if gradient is not None else NO_GRADIENT


def _is_op_library(value):
    """A module tf.load_op_library returned (it marks itself a TensorFlow plugin)."""
    return getattr(value, "_IS_TENSORFLOW_PLUGIN", False) is True


def _import_all(name):
    """The module and, for a package, its submodules; a .py path is imported
    by its file name, with its folder first on sys.path."""
    if name.endswith(".py"):
        path = pathlib.Path(name).resolve()
        if not path.is_file():
            raise OptionError(f"no such Python file: {name}")
        sys.path.insert(0, str(path.parent))
        name = path.stem
    try:
        modules = coverage.import_all(name)
    except ImportError as error:
        raise OptionError(f"cannot import {name!r}: {error}. Name the module or package that "
                          "loads your op library and registers its gradients, as you would "
                          "import it (or add its folder to PYTHONPATH).") from None
    return modules
