"""What `import gradcheck` offers: the names in __all__, and one family of exceptions."""
import ast
import inspect
import pathlib
import types

import pytest

import gradcheck
from gradcheck import errors


def test_all_lists_exactly_the_public_names_and_each_one_loads():
    # Submodules and the lazy loader's own import are not public names.
    public = {name for name in dir(gradcheck) if not name.startswith("_")
              and not isinstance(getattr(gradcheck, name), types.ModuleType)}
    assert set(gradcheck.__all__) == public
    assert gradcheck.__all__ == sorted(gradcheck.__all__)


def test_every_exception_gradcheck_raises_on_purpose_is_exported_and_shares_one_base():
    defined = {name for name, value in vars(errors).items()
               if inspect.isclass(value) and issubclass(value, Exception)}
    assert defined <= set(gradcheck.__all__)
    for name in defined:
        assert issubclass(getattr(gradcheck, name), gradcheck.GradcheckError)


def test_the_exceptions_keep_the_builtin_types_users_already_catch():
    assert issubclass(gradcheck.GradientCheckError, AssertionError)
    assert issubclass(gradcheck.CheckSetupError, ValueError)
    assert issubclass(gradcheck.DeviceUnavailable, ValueError)
    assert issubclass(gradcheck.CommandLineError, ValueError)
    assert issubclass(gradcheck.OpBuildError, RuntimeError)


def test_an_unknown_name_is_an_attribute_error_naming_it():
    with pytest.raises(AttributeError, match="no attribute 'check_gradient'"):
        gradcheck.check_gradient  # noqa: B018


def test_only_the_tf_module_imports_tensorflow():
    package = pathlib.Path(gradcheck.__file__).parent
    importing = []
    for path in sorted(package.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                     else [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
            if any(name == "tensorflow" or name.startswith("tensorflow.") for name in names):
                importing.append(str(path.relative_to(package)))
    assert sorted(set(importing)) == ["_tf.py"]
