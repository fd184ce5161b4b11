"""Checking model option values.

Config validation only knows option *names*; the values reach the builders here, and a bad one
(a float layer count, a seq_len past the position table) must fail with a message naming the
model and the option rather than as a shape error inside torch.
"""

from __future__ import annotations

from typing import Any

from torchscale.contracts.errors import ModelError


def positive_int(model: str, option: str, value: Any) -> int:
    """`value` as an int >= 1 (bools are rejected even though Python counts them as ints)."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ModelError(
            f"model '{model}': option '{option}' must be a positive integer, got {value!r}"
        )
    return value


def probability(model: str, option: str, value: Any) -> float:
    """`value` as a float in [0, 1), e.g. a dropout rate."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value < 1:
        raise ModelError(
            f"model '{model}': option '{option}' must be a number in [0, 1), got {value!r}"
        )
    return float(value)


def at_most(model: str, option: str, value: int, limit: int, why: str) -> int:
    """`value` unless it exceeds `limit` (`why` says where the limit comes from)."""
    if value > limit:
        raise ModelError(f"model '{model}': option '{option}' = {value} exceeds {limit} ({why})")
    return value


def divisible(model: str, option: str, value: int, by: int, why: str) -> int:
    """`value` unless it is not a multiple of `by`."""
    if value % by:
        raise ModelError(
            f"model '{model}': option '{option}' = {value} must be a multiple of {by} ({why})"
        )
    return value


def switch(model: str, option: str, value: Any) -> bool:
    """`value` as a bool: true or false, never a number or a string."""
    if not isinstance(value, bool):
        raise ModelError(f"model '{model}': option '{option}' must be true or false, got {value!r}")
    return value
