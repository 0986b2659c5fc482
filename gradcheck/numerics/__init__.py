"""numerics: finite differences, tolerances and comparisons, with numpy alone (no TensorFlow)."""
