"""The paths the plugin writes to (the JSON report, the artifacts folder),
checked at start-up: a bad path found after the tests ran would cost the run."""
import os
import pathlib

from gradcheck.errors import OptionError


def require_writable_file(text):
    """A file path whose file can be written (created, with its folders, if missing)."""
    path = pathlib.Path(text)
    if path.is_dir():
        raise OptionError(f"{text!r} is a folder; give a file path, such as "
                          f"{str(path / 'gradcheck.json')!r}.")
    if path.exists():
        _require_access(path, "write")
    else:
        _require_creatable(path.parent, text)


def require_writable_folder(text):
    """A folder path that is a writable folder, or can be created as one."""
    path = pathlib.Path(text)
    if path.exists() and not path.is_dir():
        raise OptionError(f"{text!r} exists and is not a folder; give a folder path (it is "
                          "created if missing), such as 'gradcheck-artifacts'.")
    _require_creatable(path, text)


def _require_creatable(folder, text):
    """The folder, or the nearest folder above it that exists, must be writable."""
    existing = folder.absolute()
    while not existing.exists():
        existing = existing.parent
    if not existing.is_dir():
        raise OptionError(f"cannot create {text!r}: {str(existing)!r} is a file, not a folder; "
                          "choose another path.")
    _require_access(existing, "write in")


def _require_access(path, verb):
    if not os.access(path, os.W_OK | (os.X_OK if path.is_dir() else 0)):
        raise OptionError(f"cannot {verb} {str(path)!r}: permission denied; choose a path you "
                          "can write to.")
