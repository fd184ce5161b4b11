"""What an old cell result cannot say in today's shape by itself, derived once at load.

`torchscale/offline/results/versions.py` upgrades the stored JSON field by field; the
functions here fill what today's readers need from what the old result did record (the
findings of a stored step model, its busy-machine caveat), as the current code would derive
them, so no reader has to know the versions.
"""
