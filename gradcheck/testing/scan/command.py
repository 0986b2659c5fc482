"""`python -m gradcheck scan TARGET`: the scan's table on stdout, progress on
stderr, JSON rows on request. Exit status 0 when nothing is wrong, 1 when a
gradient is wrong (or, --strict, has no valid inputs), 2 for a usage error."""
import json
import os
import pathlib
import sys

from gradcheck.errors import CommandLineError, OptionError
from gradcheck.testing import cli, output_paths

USAGE_ERROR = cli.USAGE_ERROR


def run_scan(args):
    # The input search runs ops on inputs they refuse: TensorFlow's C++
    # warnings about each would bury the table.
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    from gradcheck.testing.scan.scanner import scan

    try:
        if args.dtype is not None:
            cli.validate_dtypes(args.dtype)
        if args.json is not None:
            output_paths.require_writable_file(args.json)
        hints = cli.load_function(args.hints, kind="NAME") if args.hints else None
        report = scan(args.target, dtypes=args.dtype, modes=args.modes, devices=args.devices,
                      examples=args.examples, order=args.order, strict=args.strict,
                      seed=args.seed, hints=hints, only=args.only, on_result=_progress)
    except (CommandLineError, OptionError, ValueError) as error:
        print(f"gradcheck: error: {error}", file=sys.stderr)
        return USAGE_ERROR
    print(report)
    if args.json is not None:
        path = pathlib.Path(args.json)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps({"target": report.target, "ok": report.ok,
                                    "results": report.rows()}, indent=2) + "\n")
    return 0 if report.ok else 1


def _progress(done, total, result):
    print(f"[{done}/{total}] {result.name}: {result.status}", file=sys.stderr, flush=True)
