"""`--inject-delay RANK:PHASE:MS` read into the spec's DelaySpec, and every wrong form told in
one line."""

from __future__ import annotations

import pytest

from torchscale.contracts.errors import UsageError
from torchscale.contracts.worker_spec import DelaySpec, parse_delay


def test_parse_delay() -> None:
    assert parse_delay("1:backward:50") == DelaySpec(rank=1, phase="backward", ms=50.0)
    assert parse_delay(" 0:Forward:2.5ms ") == DelaySpec(rank=0, phase="forward", ms=2.5)
    assert parse_delay("3:optimizer:1").text() == "3:optimizer:1"


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("1:backward", "expected RANK:PHASE:MS"),
        ("1:backward:50:3", "expected RANK:PHASE:MS"),
        ("", "expected RANK:PHASE:MS"),
        ("-1:backward:50", "is not a rank"),
        ("one:backward:50", "is not a rank"),
        ("1:grad_sync_wait:50", "is not one of data, forward, backward, optimizer"),
        ("1:backwards:50", "is not one of"),
        ("1:backward:fast", "is not a number of milliseconds"),
        ("1:backward:0", "more than 0"),
        ("1:backward:-5", "more than 0"),
        ("1:backward:nan", "more than 0"),
        ("1:backward:1e9", "at most 60000 ms"),
    ],
)
def test_parse_delay_errors_are_one_line(text: str, problem: str) -> None:
    with pytest.raises(UsageError) as caught:
        parse_delay(text)
    message = str(caught.value)
    assert problem in message
    assert "\n" not in message
    assert message.startswith(f"--inject-delay {text!r}")
