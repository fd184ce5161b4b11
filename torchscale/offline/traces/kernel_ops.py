"""Which collective each communication kernel ran: the launch's own metadata first, its name second.

NCCL does not promise that a kernel's name names its op: every op without a specialised kernel
runs in a generic one (`ncclDevKernel_Generic`; before 2.19 `ncclKernel_SendRecv_RING_SIMPLE_
Sum_int8_t`), so a reader that trusts names reads "unknown", or the wrong op. The launch knows:
the host-side call that enqueued the collective (`record_param_comms` with its "Collective
name", c10d's `nccl:<op>` range, the `c10d::<op>` dispatcher op) encloses the CUDA runtime call
that launched the kernel, and the kernel shares that runtime call's correlation id. So, per
kernel, in order:
1. the kernel's own "Collective name" arg (recent PyTorch writes the collective's args on the
   kernel too; the reader's classification already took it: `op_source` "metadata");
2. the innermost call with a known op enclosing the launch on the launching thread
   (`op_source` "metadata");
3. the kernel's name (`op_source` "name"), where nothing links it to a call (no runtime row
   with its correlation, or no enclosing call with a known op).
Where the metadata and a name that says an op (`classify.kernel_name_op`) disagree, the
metadata wins and the disagreement is a note (`trace.kernel_name_disagrees`), so it is seen.

Works on the event table alone (`rank_trace.py`), so the Kineto and nsys readers share it.
Vectorised: one merge per step, whatever the number of kernels.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from torchscale.contracts.finding import Finding
from torchscale.contracts.wording.profile import note
from torchscale.offline.traces.classify import kernel_name_op, ops_agree
from torchscale.offline.traces.rank_trace import UNKNOWN_OP

MAX_EXAMPLES = 5  # (name op, metadata op) pairs quoted in the note


def resolve_kernel_ops(events: pd.DataFrame) -> Finding | None:
    """Set `coll_op` and `op_source` of the device-side collectives in place; the note of
    their name/metadata disagreements, None when there is none."""
    kernels = (events["kind"] == "collective") & events["device_side"]
    if not kernels.any():
        return None
    linked = kernels & (events["op_source"] != "metadata") & events["correlation"].notna()
    if linked.any():
        found = _launching_call_ops(events, events.index[linked])
        if not found.empty:
            events.loc[found.index, "coll_op"] = found.to_numpy()
            events.loc[found.index, "op_source"] = "metadata"
    return _disagreements(events, kernels)


def kernel_launches(events: pd.DataFrame, rows: pd.DataFrame) -> pd.DataFrame:
    """The runtime call (first by start, same correlation) that launched each device row:
    columns _row (the row's index), ts (float64) and tid (int64, the launching thread),
    sorted by ts; rows without one are left out."""
    if rows.empty:
        return pd.DataFrame({"_row": [], "ts": [], "tid": []})
    wanted = events["correlation"].isin(rows["correlation"].dropna())
    is_runtime = wanted & (events["kind"] == "runtime")
    runtime = events.loc[is_runtime, ["correlation", "ts", "tid"]]  # only the rows' launches
    if runtime.empty:
        return pd.DataFrame({"_row": [], "ts": [], "tid": []})
    first = runtime.sort_values("ts", kind="stable").drop_duplicates("correlation")
    launch = (
        rows[["correlation"]]
        .rename_axis("_row")
        .reset_index()
        .merge(first, on="correlation", how="inner")
    )
    launch = launch[["_row", "ts", "tid"]].astype({"ts": np.float64, "tid": np.int64})
    return launch.sort_values("ts", kind="stable")


def _launching_call_ops(events: pd.DataFrame, rows: pd.Index) -> pd.Series:
    """The op of the innermost known-op call enclosing each kernel's launch (kernels whose
    launch no such call encloses are left out)."""
    is_call = (
        (events["kind"] == "collective_call")
        & events["coll_op"].notna()
        & (events["coll_op"] != UNKNOWN_OP)
    )
    calls = events.loc[is_call, ["ts", "dur", "tid", "coll_op"]]
    if calls.empty:
        return pd.Series(dtype=object)
    launch = kernel_launches(events, events.loc[rows, ["correlation"]])
    if launch.empty:
        return pd.Series(dtype=object)
    calls = pd.DataFrame(
        {
            "call_ts": calls["ts"].to_numpy(np.float64),
            "call_end": (calls["ts"] + calls["dur"]).to_numpy(np.float64),
            "tid": calls["tid"].to_numpy(np.int64),
            "op": calls["coll_op"].astype(object).to_numpy(),
        }
    ).sort_values(["tid", "call_ts", "call_end"], ascending=[True, True, False], kind="stable")
    # the latest call to start before the launch is the innermost enclosing one, unless it
    # ended before the launch (a sibling): then the outermost call still open holds it
    inner = _enclosing(launch, calls)
    missing = launch[~launch["_row"].isin(inner.index)]
    if missing.empty:
        return inner
    prev_end = calls.groupby("tid", sort=False)["call_end"].cummax().groupby(calls["tid"]).shift(1)
    outer = calls[prev_end.isna() | (calls["call_ts"] >= prev_end)]
    return pd.concat([inner, _enclosing(missing, outer)])


def _enclosing(launch: pd.DataFrame, calls: pd.DataFrame) -> pd.Series:
    """Per launch row, the op of the latest-starting call before it, where that call is still
    open when the launch starts (starts only: sub-microsecond rounding can push a nested
    event's end past its parent's); indexed by the kernel's row."""
    joined = pd.merge_asof(
        launch,
        calls.sort_values("call_ts", kind="stable"),
        left_on="ts",
        right_on="call_ts",
        by="tid",
        direction="backward",
    )
    held = joined[joined["call_end"].notna() & (joined["ts"] < joined["call_end"])]
    return pd.Series(held["op"].to_numpy(dtype=object), index=held["_row"].to_numpy())


def _disagreements(events: pd.DataFrame, kernels: pd.Series) -> Finding | None:
    """`trace.kernel_name_disagrees` for kernels whose metadata op their name contradicts."""
    meta = events.loc[kernels & (events["op_source"] == "metadata"), ["name", "coll_op"]]
    if meta.empty:
        return None
    pairs = meta.astype(object).value_counts(sort=False).reset_index(name="count")
    said = pairs["name"].map({n: kernel_name_op(str(n)) for n in pairs["name"].unique()})
    pairs = pairs.assign(name_op=said)
    bad = pairs[
        [
            n != UNKNOWN_OP and not ops_agree(n, str(m))
            for n, m in zip(pairs["name_op"], pairs["coll_op"], strict=True)
        ]
    ]
    if bad.empty:
        return None
    by_ops = bad.groupby(["name_op", "coll_op"], sort=True)["count"].sum()
    by_ops = by_ops.sort_values(ascending=False, kind="stable")
    examples = [[str(n), str(m), int(c)] for (n, m), c in by_ops.head(MAX_EXAMPLES).items()]
    return note("trace.kernel_name_disagrees", count=int(bad["count"].sum()), ops=examples)
