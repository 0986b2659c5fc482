"""The corpus as a table: op, family, dtypes, modes, examples run, and the worst
error as a fraction of its tolerance (1.0 would be a failure).

    python tests/corpus/table.py                 # every op, every mode and dtype
    python tests/corpus/table.py --examples 10 --family linalg
"""
import argparse
import os
import pathlib
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2]))

from tests.corpus.ops import OPS
from tests.corpus.run import run_op


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--examples", type=int, default=3, help="Hypothesis examples per dtype")
    parser.add_argument("--quick", action="store_true",
                        help="as the test suite: every mode in the widest dtype, function mode "
                             "in the others")
    parser.add_argument("--family", help="only the ops of this family")
    parser.add_argument("--op", help="only the op with this name")
    options = parser.parse_args()
    ops = [op for op in OPS if options.family in (None, op.family) and options.op in (None, op.name)]
    print("| op | family | dtypes | modes | examples | worst error / tolerance | verdict |")
    print("|---|---|---|---|---|---|---|")
    failures = 0
    for op in ops:
        row = run_op(op, options.examples, "quick" if options.quick else "full")
        verdict = row.verdict
        if op.defect:
            verdict = ("known TensorFlow defect: " + op.defect if not row.ok
                       else "FAIL: the known defect no longer shows (" + op.defect + ")")
        failures += row.ok == bool(op.defect)
        print(f"| {op.name} | {op.family} | {', '.join(op.dtypes)} | {', '.join(op.modes)} | "
              f"{row.examples} | {row.worst_ratio:.3g} ({row.worst_dtype}) | {verdict} |",
              flush=True)
    defects = sum(bool(op.defect) for op in ops)
    print(f"\n{len(ops)} ops; {defects} known TensorFlow defects (expected to fail); "
          f"{failures} other failures.")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
