"""The pipeline's cost model and its split (torchscale/rank/parallel/pieces.py): stages balanced
by forward FLOPs (input part, blocks, output part), not by block count."""

from __future__ import annotations

import pytest
import torch

from torchscale.rank.models import build_model
from torchscale.rank.parallel import pieces
from torchscale.rank.parallel.pieces import balanced_runs, block_ranges, part_flops

META = torch.device("meta")


def _sizes(runs: list[range]) -> list[int]:
    return [len(r) for r in runs]


def test_balanced_runs_weigh_the_parts_against_the_blocks() -> None:
    # 12 equal blocks, an output part worth 4.5 of them (GPT-2's LM head at 1,024 tokens)
    flops = [0.0, *[1.0] * 12, 4.5]
    assert _sizes(balanced_runs(flops, 2)) == [8, 4]  # 8 | 4 + 4.5, not 6 | 6 + 4.5
    # the head alone outweighs two blocks: the last stage holds it alone, the costliest stage
    # costs 4.5 (by count it held a block and the head: 5.5)
    runs = balanced_runs(flops, 8)
    assert _sizes(runs)[-1] == 0 and sum(_sizes(runs)) == 12
    assert max(_sizes(runs)[:-1]) == 2 and min(_sizes(runs)[1:-1]) >= 1
    # equal parts and no extra cost: the even split by count
    assert _sizes(balanced_runs([0.0, *[1.0] * 12, 0.0], 4)) == [3, 3, 3, 3]
    # an input part that costs blocks' worth takes them off the first stage
    assert _sizes(balanced_runs([2.0, *[1.0] * 6, 0.0], 2)) == [2, 4]
    with pytest.raises(ValueError, match="cannot fill"):
        balanced_runs([0.0, 1.0, 0.0], 3)


def test_gpt2_at_8_stages_is_split_by_its_flops() -> None:
    with META:
        bundle = build_model("gpt2")
    example, _ = bundle.make_batch(2, META)
    flops = part_flops(bundle.model.parallel_plan().pipeline_parts(), example)
    block, head = flops[1], flops[-1]
    assert flops[0] == 0  # lookups: no FLOPs
    assert all(f == block for f in flops[1:-1])
    # per token: a block's 24 h^2 + attention 4 T h against the head's 2 h V (h 768, T 1,024,
    # V 50,304): about four and a half blocks
    assert head / block == pytest.approx(2 * 50304 / (24 * 768 + 4 * 1024), rel=1e-3)
    split = pieces.split_at_blocks(bundle.model, 8, example)
    by_count = [len(r) for r in block_ranges(12, 8)]
    assert by_count[-1] == 1 and _sizes(split.runs)[-1] == 0
    assert split.holds[-1] == "output part"
    assert split.flops is not None and max(split.flops) == pytest.approx(head / 2)
    assert max(split.flops) < (head + block) / 2  # the slowest stage by count


def test_the_cost_model_runs_a_model_with_bf16_activations_on_meta() -> None:
    """A bf16 run casts its residual stream under autocast; the cost model runs the parts on
    the meta device, which has no autocast: it counts there as without the cast (a CPU pp
    cell in bf16 once failed here, 'unknown device type for autocast')."""
    from torchscale.rank.models.layers import set_bf16_activations

    with META:
        bundle = build_model("tiny-gpt2")
    assert set_bf16_activations(bundle.model, True) > 0
    example, _ = bundle.make_batch(2, META)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        split = pieces.split_at_blocks(bundle.model, 2, example)
    assert split.flops is not None and len(split.flops) == 2
