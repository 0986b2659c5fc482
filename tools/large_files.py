"""Fail when git tracks a file over 1 MB: build products and downloads stay out."""
import os
import subprocess
import sys

LIMIT = 1 << 20


def main():
    tracked = subprocess.run(["git", "ls-files", "-z"], capture_output=True, check=True).stdout
    large = [(os.path.getsize(name), name) for name in tracked.decode().split("\0")
             if name and os.path.isfile(name) and os.path.getsize(name) > LIMIT]
    for size, name in sorted(large, reverse=True):
        print(f"{name}: {size / 1e6:.1f} MB is tracked; build products and downloads do not "
              "belong in the repository (git rm --cached it, and add it to .gitignore).")
    return 1 if large else 0


if __name__ == "__main__":
    sys.exit(main())
