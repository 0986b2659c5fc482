"""Whether `gradcheck.scan` raises false alarms on TensorFlow's own gradients:
one scan of 158 differentiable tf.raw_ops (math, reductions, the matmul and
matrix family, nn, array), with the short hint table below and otherwise the
scan's defaults (the input search, 3 examples in the most precise dtype and
1 in each other float dtype, the first of each at order 2, every mode).

It prints one markdown row per op (its result, the inputs checked or the
reason, the seconds it took) and a summary: the counts by result, the total
and the median seconds per op. Each op found wrong is then to be explained:
a TensorFlow defect (with the evidence) or a false alarm; docs/scan-tensorflow.md
has the table of one run and that explanation.

    python benchmarks/scan_tf_ops.py     # about 12 minutes on one core
"""
import os
import sys
import time
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np

from gradcheck import scan

UNARY = ["Abs", "Neg", "Sign", "Square", "Sqrt", "Rsqrt", "Reciprocal", "Exp", "Expm1", "Log",
         "Log1p", "Sin", "Cos", "Tan", "Asin", "Acos", "Atan", "Sinh", "Cosh", "Tanh", "Asinh",
         "Acosh", "Atanh", "Sigmoid", "Erf", "Erfc", "Erfinv", "Ndtri", "Lgamma", "Digamma",
         "Dawsn", "BesselI0e", "BesselI1e"]
BINARY = ["Add", "AddV2", "Sub", "Mul", "Div", "RealDiv", "DivNoNan", "MulNoNan", "Maximum",
          "Minimum", "Pow", "Atan2", "SquaredDifference", "Xlogy", "Xdivy", "Xlog1py", "Igamma",
          "Igammac", "Zeta", "Polygamma", "Betainc", "ClipByValue"]
COMPLEX = ["Complex", "Real", "Imag", "Conj", "Angle", "ComplexAbs"]
REDUCTIONS = ["Sum", "Mean", "Prod", "Max", "Min", "EuclideanNorm", "Cumsum", "Cumprod",
              "CumulativeLogsumexp", "AddN", "L2Loss", "SegmentSum", "SegmentMean",
              "UnsortedSegmentSum"]
MATRIX = ["MatMul", "BatchMatMul", "BatchMatMulV2", "BatchMatMulV3", "Einsum", "Cross",
          "MatrixInverse", "MatrixDeterminant", "LogMatrixDeterminant", "MatrixSolve",
          "MatrixTriangularSolve", "MatrixBandPart", "MatrixDiag", "MatrixDiagPart",
          "MatrixSetDiag", "MatrixDiagV3", "MatrixDiagPartV3", "Diag", "DiagPart"]
NN = ["Relu", "Relu6", "Elu", "Selu", "Softplus", "Softsign", "LeakyRelu", "BiasAdd",
      "BiasAddV1", "Softmax", "LogSoftmax", "SoftmaxCrossEntropyWithLogits",
      "SparseSoftmaxCrossEntropyWithLogits", "Conv2D", "Conv3D", "DepthwiseConv2dNative",
      "Conv2DBackpropInput", "MaxPool", "MaxPoolV2", "MaxPool3D", "AvgPool", "AvgPool3D", "LRN",
      "FusedBatchNormV3"]
ARRAY = ["Identity", "IdentityN", "Cast", "Transpose", "ConjugateTranspose", "Reshape",
         "ExpandDims", "Squeeze", "Concat", "ConcatV2", "Pack", "Unpack", "Split", "SplitV",
         "Tile", "BroadcastTo", "Fill", "Pad", "PadV2", "MirrorPad", "Slice", "StridedSlice",
         "Gather", "GatherV2", "GatherNd", "ScatterNd", "TensorScatterUpdate", "TensorScatterAdd",
         "Reverse", "ReverseV2", "Roll", "Select", "SelectV2", "SpaceToDepth", "DepthToSpace",
         "SpaceToBatchND", "BatchToSpaceND", "ResizeBilinear", "ResizeNearestNeighbor",
         "ExtractImagePatches"]
OPS = UNARY + BINARY + COMPLEX + REDUCTIONS + MATRIX + NN + ARRAY

TF_OP_HINTS = {
    # strides has no default, and the input must be an NHWC image for a HWIO filter.
    "Conv2D": {"attrs": {"strides": [1, 1, 1, 1], "padding": "VALID"},
               "shapes": {"input": (1, 3, 3, 2), "filter": (2, 2, 2, 1)}},
    # ksize and strides have no default.
    "MaxPool": {"attrs": {"ksize": [1, 2, 2, 1], "strides": [1, 1, 1, 1], "padding": "VALID"}},
    "AvgPool": {"attrs": {"ksize": [1, 2, 2, 1], "strides": [1, 1, 1, 1], "padding": "VALID"}},
    # equation has no default.
    "Einsum": {"attrs": {"equation": "ij,jk->ik"}},
    # num, its number of outputs, must equal the input's first side.
    "Unpack": {"attrs": {"num": 2}},
    # clip_value_min <= clip_value_max, and t away from both (the kinks).
    "ClipByValue": {"inputs": {"t": [[-0.8, -0.3, 0.1], [0.3, 0.7, -0.6]],
                               "clip_value_min": -0.5, "clip_value_max": 0.5}},
    # Each row of labels is a probability distribution (the gradient assumes it).
    "SoftmaxCrossEntropyWithLogits": {"inputs": {"labels": [[0.2, 0.3, 0.5], [0.6, 0.1, 0.3]]}},
    # size is the output's height and width: a 2-vector, not a function of the rank.
    "ResizeBilinear": {"inputs": {"size": [3, 5]}, "shapes": {"images": (1, 2, 3, 1)}},
}


def timed_scan(ops):
    """(report, {op type: seconds}) of one scan with the hint table."""
    seconds, last = {}, [time.perf_counter()]

    def lap(done, total, result):
        now = time.perf_counter()
        seconds[result.name] = now - last[0]
        last[0] = now
        print(f"[{done}/{total}] {result.name}: {result.status}", file=sys.stderr, flush=True)

    return scan(ops, hints=TF_OP_HINTS, on_result=lap), seconds


def main():
    report, seconds = timed_scan(OPS)
    print("| op | result | inputs or reason | seconds |")
    print("|---|---|---|---|")
    for result in report.results:
        detail = result.detail.splitlines()[0].replace("|", "\\|") if result.detail else ""
        print(f"| {result.name} | {result.status} | {detail} | "
              f"{seconds[result.name]:.2f} |")
    counts = ", ".join(f"{n} {status}" for status, n in report.counts().items())
    times = list(seconds.values())
    print(f"\n{len(report.results)} ops: {counts}; {sum(times):.0f} s in all, median "
          f"{np.median(times):.2f} s per op")
    for result in report.results:
        if result.status == "wrong":
            print(f"\n{result.name}: {result.report.failure_message()}\n{result.reproduction}")


if __name__ == "__main__":
    main()
