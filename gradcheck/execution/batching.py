"""One row at a time, or a batch through tf.vectorized_map: whichever costs
less. Converting a function for tf.vectorized_map costs little for plain ops
but tenths of a second to seconds for control flow (tf.scan's TensorLists,
while loops), where a few small calls of the trace already made cost less."""
import time

from gradcheck.execution.traces import has_control_flow, marks

# A batch of at most SMALL_BATCH rows of at most SMALL_ROW elements each.
SMALL_BATCH = 16
SMALL_ROW = 1 << 16
# With control flow, rows run one at a time if the batch would take this long at most.
ROWS_BUDGET_SECONDS = 0.5
# Rows this large run one at a time: each already keeps every core busy, and a
# batch would multiply the pass's memory by its rows (benchmarks/memory.py).
LARGE_ROW = 1 << 22


def _is_small_batch(rows, row_size):
    return rows <= SMALL_BATCH and row_size <= SMALL_ROW


def rows_if_cheaper(n_rows, row_size, one_row, target, what):
    """[one_row(b) for b in range(n_rows)] when that costs less than a batch,
    else None (the caller batches). `what` names the batch (finite
    differences of an input, a mode's VJPs) for the target's marks, or is
    None where a batched trace would not outlive the check (a v1 graph).

    A small batch runs row by row the first time, and batched once the same
    function is checked again (a Hypothesis run: one trace then serves every
    later example), unless it has control flow. A larger batch runs row by row
    only for a function with control flow, and only while the second row's
    time (the first may trace) says all of them fit in ROWS_BUDGET_SECONDS.
    Rows of LARGE_ROW elements or more always run one at a time."""
    if row_size >= LARGE_ROW:
        return [one_row(b) for b in range(n_rows)]
    control_flow = target is not None and has_control_flow(target)
    if _is_small_batch(n_rows, row_size):
        if control_flow or _first_time(target, what):
            return [one_row(b) for b in range(n_rows)]
        return None
    if not control_flow:
        return None
    results = [one_row(0)]
    start = time.perf_counter()
    results.append(one_row(1))
    if (time.perf_counter() - start) * n_rows > ROWS_BUDGET_SECONDS:
        return None
    return results + [one_row(b) for b in range(2, n_rows)]


def _first_time(target, what):
    if target is None or what is None:
        return True
    seen = marks(target).setdefault("small batches seen", set())
    first = what not in seen
    seen.add(what)
    return first
