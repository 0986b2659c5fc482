"""Whether a check fits in memory, known before it starts.

A fast-mode check of a large input peaks at about FAST_BYTES_PER_COMPONENT
bytes per real component of the differentiated inputs (benchmarks/memory.py;
docs/benchmarks.md), so one that cannot fit is refused before the first
forward pass instead of dying in a MemoryError minutes later.
"""
try:
    import resource
except ImportError:  # not a Unix: no address-space limit to read
    resource = None

from gradcheck.errors import CheckSetupError

# Measured peak above the process baseline, elementwise sin, 10^6 to 10^8
# elements (2026-12-08): 30-32 times the float32 input's bytes (120-128 bytes
# a component), 19-25 times float64's (155-200).
FAST_BYTES_PER_COMPONENT = 180


def require_fits(n_components):
    """Refuse a check of `n_components` real input components that would need
    more memory than this process can still get."""
    needed = n_components * FAST_BYTES_PER_COMPONENT
    available, limit = available_bytes()
    if available is not None and needed > available:
        raise CheckSetupError(
            f"checking {n_components:,} real input components needs about "
            f"{_gigabytes(needed)} of memory (about {FAST_BYTES_PER_COMPONENT} bytes each, "
            f"in fast mode), but this process can get about {_gigabytes(available)} more "
            f"({limit}). Check a smaller input (the gradient of an op rarely depends on its "
            "size), or run where more memory is free.")


def available_bytes():
    """(bytes this process can still allocate, what limits it), or (None, '')
    where the system does not say."""
    candidates = []
    address_space = resource.getrlimit(resource.RLIMIT_AS)[0] if resource else None
    used = _status_bytes("VmSize")
    if address_space not in (None, getattr(resource, "RLIM_INFINITY", None)) and used is not None:
        candidates.append((address_space - used, "its address-space limit, ulimit -v"))
    free = _meminfo_bytes("MemAvailable")
    if free is not None:
        candidates.append((free, "the memory the system has available"))
    return min(candidates) if candidates else (None, "")


def _gigabytes(n_bytes):
    return f"{n_bytes / 1e9:.1f} GB"


def _status_bytes(field):
    return _field_bytes("/proc/self/status", field)


def _meminfo_bytes(field):
    return _field_bytes("/proc/meminfo", field)


def _field_bytes(path, field):
    """A 'Field:   123 kB' line of a /proc file, in bytes; None if absent."""
    try:
        with open(path) as lines:
            for line in lines:
                if line.startswith(field + ":"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        return None
    return None
