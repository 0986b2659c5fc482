"""python -m gradcheck check MODULE:FUNCTION --shape 3,4 --dtype float32,float64

Exit status: 0 when every check passes, 1 when a gradient is wrong, 2 for a
usage error (a bad module path, a module that fails to import, a bad shape,
dtype or seed): never 1, which would read as a wrong gradient.
"""
import argparse
import importlib
import sys
import traceback

import numpy as np

from gradcheck.errors import CommandLineError
from gradcheck.testing import config as configuration

USAGE_ERROR = 2


def build_parser():
    parser = argparse.ArgumentParser(
        prog="python -m gradcheck",
        description="Check that the gradients TensorFlow uses for a function match finite "
                    "differences, in every execution mode.",
        epilog="example: python -m gradcheck check mypackage.ops:my_op --shape 3,4 "
               "--dtype float32,float64   (see: python -m gradcheck check --help)")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    check = commands.add_parser(
        "check", help="check MODULE:FUNCTION on random inputs",
        description="Check FUNCTION from MODULE on random inputs: one --shape per argument, "
                    "once for each dtype.")
    check.add_argument("target", metavar="MODULE:FUNCTION",
                       help="the function to check, e.g. mypackage.ops:my_op")
    check.add_argument("--shape", action="append", type=parse_shape, required=True,
                       metavar="D1,D2,...",
                       help="shape of one argument (repeat for each argument; '' for a scalar)")
    check.add_argument("--dtype", type=parse_dtypes, default=("float64",),
                       metavar="DTYPES", help="comma-separated dtypes, each checked in turn "
                                              "(default: float64)")
    check.add_argument("--modes", type=configuration.parse_list, default=None,
                       help="eager, function, graph, xla, comma-separated (default: all)")
    check.add_argument("--devices", type=configuration.parse_list, default=None,
                       help="cpu, gpu, all or device names, comma-separated (default: cpu)")
    check.add_argument("--order", type=int, choices=(1, 2), default=1,
                       help="2 also checks the gradient of the gradient")
    check.add_argument("--seed", type=parse_seed, default=0,
                       help="an integer >= 0; seeds the inputs and cotangents")
    check.add_argument("--strict", action="store_true",
                       help="a mode that cannot run here fails the check")
    _add_scan_parser(commands)
    return parser


def _add_scan_parser(commands):
    scan = commands.add_parser(
        "scan", help="check every gradient a package or op library defines",
        description="Check every gradient TARGET defines, on inputs found from each op's OpDef: "
                    "a module or package (as you would import it) or a .py file that loads op "
                    "libraries and registers gradients, or a compiled op library (.so).")
    scan.add_argument("target", metavar="TARGET",
                      help="e.g. mypackage.ops, mypackage/ops.py or build/my_ops.so")
    scan.add_argument("--dtype", type=parse_dtypes, default=None, metavar="DTYPES",
                      help="only these dtypes, comma-separated (default: every float dtype "
                           "each op's OpDef and CPU kernels allow)")
    scan.add_argument("--modes", type=configuration.parse_list, default=None,
                      help="eager, function, graph, xla, comma-separated (default: all)")
    scan.add_argument("--devices", type=configuration.parse_list, default=None,
                      help="cpu, gpu, all or device names, comma-separated (default: cpu)")
    scan.add_argument("--examples", type=parse_examples, default=3, metavar="N",
                      help="examples per op in its most precise dtype (default: 3)")
    scan.add_argument("--order", type=int, choices=(1, 2), default=2,
                      help="2 (the default) also checks the gradient of the gradient, once "
                           "per dtype")
    scan.add_argument("--seed", type=parse_seed, default=0,
                      help="an integer >= 0; seeds the inputs and cotangents")
    scan.add_argument("--hints", metavar="MODULE:NAME", default=None,
                      help="input hints, a dict {op type: hint} (docs/scan.md), besides the "
                           "GRADCHECK_SCAN_HINTS of TARGET's modules")
    scan.add_argument("--only", type=configuration.parse_list, default=None, metavar="NAMES",
                      help="scan only these gradients: op types or function names, comma-separated")
    scan.add_argument("--json", metavar="PATH", default=None,
                      help="also write one JSON row per op to PATH")
    scan.add_argument("--strict", action="store_true",
                      help="an op the scan found no valid inputs for fails the scan")


def parse_examples(text):
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"--examples is an integer >= 1, got {text!r}")
    return value


def parse_shape(text):
    if text.strip() in ("", "()", "scalar"):
        return ()
    try:
        shape = tuple(int(part) for part in text.replace("x", ",").split(",") if part.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"a shape is comma-separated non-negative integers such as 3,4, got {text!r}") from None
    if any(d < 0 for d in shape):
        raise argparse.ArgumentTypeError(f"a shape cannot have negative sides, got {text!r}")
    return shape


def parse_dtypes(text):
    from gradcheck.numerics.dtypes import dtype_name  # 'f4', 'double': numpy's names too

    dtypes = [dtype_name(d) for d in configuration.parse_list(text) or ()]
    if not dtypes:
        raise argparse.ArgumentTypeError("give at least one dtype, such as float64 or "
                                         "float32,float64")
    return dtypes


def parse_seed(text):
    try:
        seed = int(text)
    except ValueError:
        seed = -1
    if seed < 0:
        raise argparse.ArgumentTypeError(f"a seed is an integer >= 0, got {text!r}")
    return seed


def load_function(target, kind="FUNCTION"):
    module_name, _, function_name = target.partition(":")
    if not module_name or not function_name:
        raise CommandLineError(f"expected MODULE:{kind}, got {target!r}")
    module = _import(module_name)
    function = module
    for part in function_name.split("."):
        if not hasattr(function, part):
            raise CommandLineError(f"module {module_name!r} has no attribute {function_name!r}")
        function = getattr(function, part)
    if kind == "FUNCTION" and not callable(function):
        raise CommandLineError(f"{target} is not callable")
    return function


def _import(module_name):
    try:
        return importlib.import_module(module_name)
    except ImportError as error:
        raise CommandLineError(f"cannot import module {module_name!r}: {error}") from None
    except SyntaxError as error:
        raise CommandLineError(f"module {module_name!r} has a syntax error: {error.msg} "
                               f"({error.filename}, line {error.lineno})") from None
    except Exception as error:  # noqa: BLE001  (the user's module may raise anything at import)
        raise CommandLineError(f"importing module {module_name!r} raised "
                               f"{type(error).__name__}: {error}{_where(error)}") from None


def _where(error):
    """Where the error was raised: the last frame outside Python's import machinery."""
    frames = [f for f in traceback.extract_tb(error.__traceback__)
              if not f.filename.startswith("<frozen") and f.filename != __file__]
    return f" ({frames[-1].filename}, line {frames[-1].lineno})" if frames else ""


def random_inputs(shapes, dtype, seed):
    from gradcheck import _tf

    rng = np.random.default_rng(seed)
    numpy_dtype = _tf.numpy_dtype(dtype)
    values = []
    for shape in shapes:
        value = rng.uniform(-1.0, 1.0, size=shape)
        if dtype.startswith("complex"):
            value = value + 1j * rng.uniform(-1.0, 1.0, size=shape)
        values.append(np.asarray(value).astype(numpy_dtype))
    return values


def main(argv=None):
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command == "scan":
        from gradcheck.testing.scan.command import run_scan

        return run_scan(args)
    if args.command != "check":
        parser.print_help()
        return USAGE_ERROR
    try:
        function = load_function(args.target)
        validate_dtypes(args.dtype)
    except CommandLineError as error:
        print(f"gradcheck: error: {error}", file=sys.stderr)
        return USAGE_ERROR
    return _run(function, args)


def validate_dtypes(dtypes):
    from gradcheck.numerics.compare import TOLERANCES

    unknown = [d for d in dtypes if d not in TOLERANCES]
    if unknown:
        raise CommandLineError(f"unknown dtype(s) {', '.join(unknown)}; choose from {', '.join(TOLERANCES)}")


def _run(function, args):
    from gradcheck.check import check_gradients
    from gradcheck.errors import CheckSetupError

    all_ok = True
    for step, dtype in enumerate(args.dtype, start=1):
        print(f"[{step}/{len(args.dtype)}] checking {args.target} in {dtype} ...",
              file=sys.stderr, flush=True)
        try:
            report = check_gradients(
                function, random_inputs(args.shape, dtype, args.seed), modes=args.modes,
                devices=args.devices, order=args.order, seed=args.seed, strict=args.strict,
                raise_on_failure=False)
        except (CheckSetupError, ValueError, TypeError) as error:
            print(f"gradcheck: error: {error}", file=sys.stderr)
            return USAGE_ERROR
        print(report.failure_message() if not report.ok else str(report))
        print()
        all_ok = all_ok and report.ok
    return 0 if all_ok else 1
