"""No false alarms: TensorFlow's own registered gradients pass, for every op of
the corpus, in every dtype it has kernels for and every mode it runs in
(GRADCHECK_CORPUS=full: every mode in every dtype; by default every mode in the
op's widest dtype and the function mode in the others)."""
import pytest

from tests.corpus.ops import OPS
from tests.corpus.run import check_dtype

pytestmark = [pytest.mark.corpus, pytest.mark.slow]

CASES = [pytest.param(op, dtype, id=f"{op.name}-{dtype}",
                      marks=[pytest.mark.xfail(strict=True, reason=op.defect)] if op.defect else [])
         for op in OPS for dtype in op.dtypes]


def test_the_corpus_is_large_and_covers_every_family():
    assert len({op.name for op in OPS}) == len(OPS), "two corpus ops share a name"
    assert len(OPS) >= 120
    families = {op.family for op in OPS}
    assert families >= {"math", "nn", "linalg", "array", "reduction", "segment", "image",
                        "signal", "complex"}
    dtypes = {dtype for op in OPS for dtype in op.dtypes}
    assert dtypes >= {"float16", "bfloat16", "float32", "float64", "complex64", "complex128"}


@pytest.mark.parametrize("op, dtype", CASES)
def test_registered_gradient_matches_finite_differences(op, dtype):
    check_dtype(op, dtype)
