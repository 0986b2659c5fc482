"""Print a markdown table of what gradcheck finds for every bug in the zoo.

    python tests/bugzoo/table.py [--only NAME ...]

One row per entry of tests/bugzoo/zoo.py (the zoo the tests run): whether full
and fast mode detect the bug ("yes" only when the report also blames the
expected input, element, modes and order, "partly" when it fails but says
something else, "no" when it passes), the input and element each names, and the
first line of the full-mode message. The shortfalls are listed below the table.
"""
import argparse
import os
import pathlib
import sys
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2]))

from tests.bugzoo import expect, zoo


def verdict(report, shortfalls):
    if report.ok:
        return "no"
    return "partly" if shortfalls else "yes"


def cell(text):
    return text.replace("|", "\\|")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", nargs="*", help="entry names to run")
    args = parser.parse_args(argv)
    bugs = [b for b in zoo.ZOO if not args.only or b.name in args.only]
    print("| bug | kind | source | full | fast | named by full | named by fast | message (full mode) |")
    print("|---|---|---|---|---|---|---|---|")
    shortfalls, counts, start = [], {"full": 0, "fast": 0}, time.perf_counter()
    for bug in bugs:
        row = [bug.name, bug.kind, bug.source]
        named, message = [], ""
        for method in ("full", "fast"):
            try:
                report = expect.run(bug, method)
            except Exception as error:  # noqa: BLE001  (a crash is a finding, shown in the table)
                row.append("crash")
                named.append("-")
                shortfalls.append(f"{bug.name} ({method}): crashed: {type(error).__name__}: {error}")
                continue
            found = expect.problems(bug, report)
            row.append(verdict(report, found))
            counts[method] += not found
            named.append(expect.named(report, bug))
            shortfalls += [f"{bug.name} ({method}): {p}" for p in found]
            if method == "full":
                message = expect.first_line(report)
        print("| " + " | ".join(cell(c) for c in row + named + [message]) + " |")
    elapsed = time.perf_counter() - start
    print(f"\n{len(bugs)} bugs; detected as expected by full mode: {counts['full']}, by fast mode: "
          f"{counts['fast']} ({elapsed:.0f} s).")
    if shortfalls:
        print("\nShortfalls:\n")
        for line in shortfalls:
            print(f"- {cell(line)}")


if __name__ == "__main__":
    main()
