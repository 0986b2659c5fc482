"""Failure artifacts: a heatmap of |analytic - reference| per failed Jacobian block.

matplotlib is optional (pip install 'gradcheck[plots]'); without it no image is made.
"""
import pathlib
import re


def save_heatmaps(report, folder, test):
    """Write one PNG per failed (output, input) block; return the paths written."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        from matplotlib import pyplot
    except ImportError:
        return []
    folder = pathlib.Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    written = []
    for pair in report.failed_pairs:
        if pair.arrays is None:
            continue
        actual, expected = pair.arrays
        figure, axes = pyplot.subplots(figsize=(6, 5))
        image = axes.imshow(abs(actual - expected), cmap="magma", aspect="auto",
                            interpolation="nearest")
        figure.colorbar(image, ax=axes, label="|gradient - reference|")
        axes.set_xlabel(f"{pair.input} (real components, flattened)")
        axes.set_ylabel(f"{pair.output} (real components, flattened)")
        axes.set_title(f"{report.function}: {pair.where}, against {pair.against}", fontsize=9)
        name = _safe(f"{test}-{pair.device}-{pair.mode}-{pair.order}-{pair.output}-{pair.input}")
        path = folder / f"{name}.png"
        figure.savefig(path, dpi=80, bbox_inches="tight")
        pyplot.close(figure)
        written.append(path)
    return written


def _safe(text):
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", text).strip("_")[:150]
