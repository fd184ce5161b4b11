"""What an MFU figure counts, in the words every output shows beside it.

MFU compares only between tools that count the same FLOPs. torchscale counts with
FlopCounterMode over one training step: 2 FLOPs per multiply-accumulate of every matmul and
convolution, forward and backward, attention's two matmuls counted in full even when causal, no
activation recomputation and no elementwise work. For a transformer that is 6N + 12LHQT per
token (N the matrix weights, the tied LM head included, L layers, H heads, Q head size, T
sequence length): nanoGPT's `estimate_mfu` and torchtitan's convention, and PaLM's (appendix B).
For GPT-2 small it is 854.4 MFLOP per token, 0.09 % under nanoGPT's 6N + 12LHQT, whose N also
counts the biases and LayerNorm weights (tests/contracts/test_model_metadata.py holds the two
together).
"""

from __future__ import annotations

MFU_CONVENTION = (
    "MFU counts model FLOPs as nanoGPT and torchtitan do (6N + 12LHQT per token for a "
    "transformer: every matmul and convolution forward and backward, causal attention counted "
    "in full, no recomputation) over the device's dense peak for the dtype that runs"
)
MFU_CONVENTION_SHORT = "6N + 12LHQT FLOPs (causal attention counted full) / dense peak"
