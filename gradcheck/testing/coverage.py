"""The gradient coverage gate: gradients a package defines that no check exercised."""
import importlib
import importlib.util
import pkgutil

from gradcheck import _tf
from gradcheck.errors import OptionError


def require_importable(package_name):
    """Fail at start-up, without importing it, if the package cannot be found."""
    try:
        spec = importlib.util.find_spec(package_name)
    except Exception as error:  # noqa: BLE001  (find_spec imports the parent packages: anything)
        raise OptionError(f"cannot look up the package {package_name!r}: "
                          f"{type(error).__name__}: {error}") from None
    if spec is None:
        raise OptionError(f"no package {package_name!r} can be imported here; name the package "
                          "that registers your gradients (as you would import it), and install "
                          "it or add its folder to PYTHONPATH (or to the ini option pythonpath).")


def defined_gradients(package_name):
    """{name: where} for every gradient `package_name` registered with
    tf.RegisterGradient, and every Defun with an overridden gradient it defines."""
    modules = import_all(package_name)
    registry = _tf.gradient_registry()
    found = {}
    for name in registry.list():
        gradient = registry.lookup(name)
        module = getattr(gradient, "__module__", "") or ""
        if gradient is not None and inside(module, package_name):
            found[name] = f"gradient registered by {module}.{gradient.__name__}"
    for module in modules:
        for attribute, value in vars(module).items():
            if _tf.is_defun(value) and (
                    getattr(value, "grad_func_name", None) or getattr(value, "python_grad_func", None)):
                found[value.name] = f"Defun {module.__name__}.{attribute} with its own gradient"
    return found


def uncovered(package_name, gradients_used):
    used = set(gradients_used)
    return {name: where for name, where in defined_gradients(package_name).items()
            if name not in used}


def inside(module, package_name):
    return module == package_name or module.startswith(package_name + ".")


def import_all(package_name):
    package = importlib.import_module(package_name)
    modules = [package]
    for info in pkgutil.walk_packages(getattr(package, "__path__", []), package_name + "."):
        modules.append(importlib.import_module(info.name))
    return modules
