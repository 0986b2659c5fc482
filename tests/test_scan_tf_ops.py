"""The scan on TensorFlow's own ops: integer inputs that are vectors or tables
(a permutation, begin and size, paddings, segment ids), type attributes only an
output has, rank-4 shapes, and the hint table of benchmarks/scan_tf_ops.py."""
import importlib.util
import pathlib

import numpy as np
import pytest

from gradcheck import scan

ROOT = pathlib.Path(__file__).resolve().parents[1]
FAST = {"modes": ["eager"], "order": 1, "examples": 1, "dtypes": ["float64"]}

# Each had "no valid inputs" with integer inputs always a scalar 1 or 0, and
# ranks 0 to 3; its integer inputs as found now.
FOUND = {
    "Transpose": [[1, 0]],  # perm, reversed
    "ConjugateTranspose": [[1, 0]],
    "Reshape": [[2, 3]],  # shape: the input's own
    "BroadcastTo": [[2, 3]],
    "Tile": [[1, 1]],  # multiples
    "Pad": [[[1, 1], [1, 1]]],  # paddings, a (rank, 2) table
    "MirrorPad": [[[1, 1], [1, 1]]],
    "Slice": [[1, 1], [1, 1]],  # begin and size by their names
    "StridedSlice": [[1, 1], [2, 3], [1, 1]],  # begin, end, strides
    "ReverseV2": [[1, 0]],  # axes
    "SegmentSum": [[0, 0]],  # segment ids along the first side
    "UnsortedSegmentSum": [[0, 0], 1],  # mixed: a vector and a scalar
}


def integers(result):
    [example] = result.examples
    return [x.tolist() for x, a in zip(example.inputs, example.call.flat) if not a.differentiable]


@pytest.mark.slow
def test_integer_inputs_that_are_vectors_or_tables_are_found():
    report = scan(list(FOUND), **FAST)
    assert {r.name: r.status for r in report.results} == dict.fromkeys(FOUND, "right")
    assert {r.name: integers(r) for r in report.results} == FOUND
    # The float input keeps its first shape: these are no smaller search results.
    assert all(r.examples[0].inputs[0].shape == (2, 3) for r in report.results)


def test_a_type_attribute_only_an_output_has_is_the_inputs_dtype():
    report = scan(["Cast", "BatchMatMulV3"], **FAST)
    assert {r.name: r.status for r in report.results} == {"Cast": "right",
                                                             "BatchMatMulV3": "right"}
    assert dict(report.results[0].examples[0].call.attrs) == {"DstT": "float64"}


def test_ops_on_images_get_rank_4_shapes_from_the_search():
    report = scan(["SpaceToDepth", "DepthToSpace"], **FAST)
    assert [r.detail for r in report.results] == ["checked on float64 (2, 2, 2, 2)",
                                                  "checked on float64 (2, 2, 2, 4)"]


def test_scalar_integer_inputs_are_still_tried_first():
    report = scan(["Sum", "GatherV2", "Roll"], **FAST)
    assert [integers(r) for r in report.results] == [[1], [1, 1], [1, 1]]


def benchmark_hints():
    path = ROOT / "benchmarks" / "scan_tf_ops.py"
    spec = importlib.util.spec_from_file_location("scan_tf_ops", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.TF_OP_HINTS


def test_an_op_whose_only_hint_is_in_the_table_needs_it():
    hints = benchmark_hints()
    assert scan(["Unpack"], **FAST).results[0].status == "no valid inputs"
    assert scan(["Unpack"], hints=hints, **FAST).results[0].status == "right"


def test_a_known_tensorflow_defect_is_found():
    # XLA's SqrtGrad forgets the conjugate (tests/corpus/ops.py, "sqrt, complex, xla").
    report = scan(["Sqrt"], modes=["xla"], order=1, examples=1, dtypes=["complex128"])
    [result] = report.results
    assert result.status == "wrong"
    assert "wrong in xla mode" in result.detail
    assert np.iscomplexobj(result.examples[-1].inputs[0])


def test_a_type_attribute_only_an_output_has_keeps_its_default():
    # Real's Tout (default float32) follows its complex input: complex64 runs.
    report = scan(["Real", "Imag"], modes=["eager"], order=1, examples=1)
    assert [r.detail for r in report.results] == ["checked on complex64 (2, 3)"] * 2
