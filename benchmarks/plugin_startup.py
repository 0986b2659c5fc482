"""How much the gradcheck plugin adds to the start-up of a pytest run that uses
no gradcheck feature: `pytest --co` on an empty test file, with and without the
plugin, side by side in one run. Prints the medians and their difference."""
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

RUNS = 15


def median_seconds(args, cwd):
    times = []
    for _ in range(RUNS):
        start = time.perf_counter()
        subprocess.run([sys.executable, "-m", "pytest", "-q", "--co", "-p", "no:cacheprovider", *args],
                       cwd=cwd, capture_output=True, check=False)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main():
    with tempfile.TemporaryDirectory() as folder:
        Path(folder, "test_empty.py").write_text("def test_nothing():\n    pass\n")
        without = median_seconds(["-p", "no:gradcheck"], folder)
        with_plugin = median_seconds([], folder)
    print(f"pytest start-up, median of {RUNS}: without gradcheck {without * 1000:.0f} ms, "
          f"with gradcheck {with_plugin * 1000:.0f} ms, "
          f"added {(with_plugin - without) * 1000:+.0f} ms (ratio {with_plugin / without:.2f})")


if __name__ == "__main__":
    main()
