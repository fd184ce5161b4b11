"""torchscale.contracts.collective_facts: one table of what each op is, and every table derived from
it naming only ops it knows."""

from __future__ import annotations

import pytest

from torchscale.contracts.catalog import COLLECTIVES
from torchscale.contracts.collective_facts import OPS, ops_where, sweep_facts
from torchscale.offline.comm.nccl_tests import (
    NON_REDUCING_OPS,
    PROGRAM_OPS,
    REDUCING_OPS,
    ROOTED_OPS,
)
from torchscale.offline.traces.classify import _OP_KEYS
from torchscale.offline.traces.rank_trace import COLL_OPS, UNKNOWN_OP
from torchscale.rank.programs.collective_ops import BUILDERS


def test_the_ops_torchscale_runs_are_the_catalogs_in_its_order() -> None:
    assert tuple(op for op, facts in OPS.items() if facts.runnable) == COLLECTIVES
    assert tuple(OPS)[: len(COLLECTIVES)] == COLLECTIVES


def test_the_comm_sweep_calls_every_runnable_op() -> None:
    assert set(BUILDERS) == set(COLLECTIVES)


def test_a_trace_names_every_op_and_unknown() -> None:
    assert (*OPS, UNKNOWN_OP) == COLL_OPS
    assert {member for _, member in _OP_KEYS} == set(OPS)


def test_nccl_tests_programs_map_onto_every_runnable_op() -> None:
    assert sorted(PROGRAM_OPS.values()) == sorted(COLLECTIVES)
    assert PROGRAM_OPS["alltoall"] == "all_to_all"
    assert PROGRAM_OPS["sendrecv"] == "send_recv"


def test_derived_sets() -> None:
    assert {"all_reduce", "reduce_scatter", "reduce"} == REDUCING_OPS
    assert {"all_gather", "broadcast", "all_to_all"} == NON_REDUCING_OPS
    assert {"broadcast", "reduce"} == ROOTED_OPS
    assert ops_where(lambda op: op.ends_together) == {
        "all_reduce",
        "all_gather",
        "reduce_scatter",
        "all_to_all",
        "barrier",
    }
    assert ops_where(lambda op: op.point_to_point) == {"send", "recv", "send_recv"}


def test_sweep_facts_refuse_an_op_torchscale_does_not_run() -> None:
    assert sweep_facts("all_to_all").ranks_in_size
    with pytest.raises(ValueError, match="unknown collective 'barrier': one of all_reduce, "):
        sweep_facts("barrier")
