"""Inputs for a Python function with its own gradient (a tf.custom_gradient
function or a Defun), where no OpDef exists: one tensor per parameter that
has no default, in the Defun's declared dtypes or the parameter's annotation
(tf.float32, np.float64, "float64", tf.TensorSpec), else float64 and
float32; shapes and values searched as for ops (op_inputs.examples_of)."""
import dataclasses
import inspect

from gradcheck import _tf
from gradcheck.numerics.compare import TOLERANCES
from gradcheck.numerics.dtypes import dtype_name
from gradcheck.testing.scan.hints import NO_HINT
from gradcheck.testing.scan.op_inputs import Argument, NoValidInputs

UNANNOTATED = ("float64", "float32")  # no dtype said: the float dtypes users pass, best first
INTEGERS = ("int32", "int64")


@dataclasses.dataclass(frozen=True)
class FunctionCall:
    """One way to call the function: a dtype per parameter (the interface of
    op_inputs.OpCall, so that the same search finds its examples)."""

    name: str
    arguments: tuple  # Argument per tensor parameter
    hint: object = NO_HINT
    attrs: tuple = ()  # a function has none; the reproduction reads them

    def fn(self, function):
        return function

    @property
    def flat(self):
        return list(self.arguments)

    @property
    def dtype(self):
        return next((a.dtype for a in self.arguments if a.differentiable), "")

    @property
    def tensor_names(self):
        return [a.name for a in self.arguments]


def function_calls(name, function, wanted_dtypes=None, hint=NO_HINT):
    """One FunctionCall per dtype to try, best first."""
    parameters = _tensor_parameters(function)
    declared = _declared_dtypes(function, parameters)
    shapes = dict(hint.shapes)
    for parameter in parameters:
        spec = parameter.annotation
        if _is_tensor_spec(spec) and spec.shape.is_fully_defined() and parameter.name not in shapes:
            shapes[parameter.name] = tuple(spec.shape.as_list())
    hint = dataclasses.replace(hint, shapes=tuple(shapes.items()))
    unsaid = [d for d in UNANNOTATED if wanted_dtypes is None or d in wanted_dtypes]
    calls = []
    for dtype in unsaid if None in declared else [None]:  # all said: one way to call it
        arguments = tuple(Argument(p.name, said or dtype, 1) for p, said in zip(parameters, declared))
        if any(a.differentiable for a in arguments) and (
                wanted_dtypes is None or any(a.dtype in wanted_dtypes for a in arguments)):
            calls.append(FunctionCall(name, arguments, hint))
    if not calls:
        raise NoValidInputs(f"none of its parameters takes a float dtype{_wanted(wanted_dtypes)}.")
    return calls


def _wanted(wanted_dtypes):
    return f" among {', '.join(wanted_dtypes)}" if wanted_dtypes else ""


def _tensor_parameters(function):
    """The parameters a caller must pass: positional, with no default."""
    target = getattr(function, "_func", function)  # a Defun's Python function
    try:
        parameters = inspect.signature(target).parameters.values()
    except (TypeError, ValueError):
        raise NoValidInputs("its signature cannot be read; give it plain parameters.") from None
    kinds = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    tensors = [p for p in parameters if p.kind in kinds and p.default is inspect.Parameter.empty]
    if not tensors:
        raise NoValidInputs("it takes no positional parameter without a default (only *args or "
                            "keywords), so the scan cannot tell what tensors it takes.")
    return tensors


def _declared_dtypes(function, parameters):
    """A dtype name per parameter: the Defun's declared input types, else the
    annotation's; None where nothing says."""
    declared = getattr(function, "declared_input_types", None)
    if declared:
        if len(declared) != len(parameters):
            raise NoValidInputs(f"its Defun declares {len(declared)} input types for "
                                f"{len(parameters)} parameters.")
        return [_tf.tf().as_dtype(t).name for t in declared]
    return [_annotated_dtype(p.annotation) for p in parameters]


def _annotated_dtype(annotation):
    if annotation is inspect.Parameter.empty:
        return None
    if _is_tensor_spec(annotation):
        return annotation.dtype.name
    try:
        name = dtype_name(annotation)
    except TypeError:  # tf.Tensor, np.ndarray: no dtype said
        return None
    return name if name in TOLERANCES or name in INTEGERS else None


def _is_tensor_spec(value):
    return isinstance(value, _tf.tf().TensorSpec)
