"""One spelling per unit: microseconds are 'µs' (never 'us'), a size has three
significant figures ('164 MiB', never '164.0 MiB'), a share is '79 %' (never '79%')."""

from __future__ import annotations

from torchscale.contracts.wording.spell import pct_whole, seconds, size_bytes


def test_microseconds_are_spelled_with_the_micro_sign() -> None:
    assert seconds(42e-6) == "42.0 µs"


def test_a_size_of_three_figures_has_no_trailing_decimal() -> None:
    assert size_bytes(164 * 2**20) == "164 MiB"
    assert size_bytes(86 * 2**10) == "86 KiB"
    assert size_bytes(512) == "512 B"
    assert size_bytes(99.96 * 2**20) == "100 MiB"


def test_a_whole_percentage_has_a_space_before_its_sign() -> None:
    assert pct_whole(0.79) == "79 %"
