"""What an MFU figure counts, in the words every output shows beside it. MFU compares only
between tools that count the same FLOPs: torchscale counts as nanoGPT, torchtitan and PaLM
(appendix B) do, 6N + 12LHQT per token for a transformer (docs/models.md, "MFU convention").
"""

from __future__ import annotations

MFU_CONVENTION = (
    "MFU counts model FLOPs as nanoGPT and torchtitan do (6N + 12LHQT per token for a "
    "transformer: every matmul and convolution forward and backward, causal attention counted "
    "in full, no recomputation) over the device's dense peak for the dtype that runs"
)
MFU_CONVENTION_SHORT = "6N + 12LHQT FLOPs (causal attention counted full) / dense peak"
