"""Device names: what the user asked for, checked against what TensorFlow sees."""
from gradcheck import _tf
from gradcheck.errors import DeviceUnavailable, OptionError

CPU = "/device:CPU:0"


def resolve_devices(devices):
    """Canonical device names ('/device:GPU:0') for 'cpu', 'GPU:1', '/gpu:0', ...;
    'all' is every CPU and GPU TensorFlow sees, 'gpu' the first GPU."""
    if devices is None:
        return [CPU]
    if isinstance(devices, str):
        devices = [d.strip() for d in devices.split(",") if d.strip()]
    if not isinstance(devices, (list, tuple)) or not all(isinstance(d, str) for d in devices):
        raise OptionError(f"devices must be a device name such as 'CPU:0' or 'GPU:0', or a list "
                          f"of them, got {devices!r}.")
    available = [d.name for d in _tf.tf().config.list_logical_devices()
                 if d.device_type in ("CPU", "GPU")]
    resolved = []
    for name in devices:
        if name.lower() == "all":
            resolved += available
        else:
            resolved.append(_canonical(name, available))
    if not resolved:
        raise OptionError(f"devices is empty; pass None for the CPU, or some of: {', '.join(available)}.")
    return list(dict.fromkeys(resolved))


def _canonical(name, available):
    tf = _tf.tf()
    try:
        spec = tf.DeviceSpec.from_string(name if name.startswith("/") else f"/{name}")
    except (ValueError, TypeError):
        spec = None
    if spec is None or spec.device_type is None:
        raise OptionError(f"{name!r} is not a device name; try 'CPU:0' or 'GPU:0'.")
    canonical = f"/device:{spec.device_type.upper()}:{spec.device_index or 0}"
    if canonical not in available:
        raise DeviceUnavailable(
            f"device {name!r} is not available: TensorFlow sees {', '.join(available)}."
        )
    return canonical


def short_name(device):
    return device.replace("/device:", "")
