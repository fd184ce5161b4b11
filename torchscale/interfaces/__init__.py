"""The interfaces: the CLI, the library API (its twin front door) and the report (one model,
a renderer per format, everything printed to a terminal).

Layer 4 (presentation and entry points) of docs/architecture.md: imports everything below it;
nothing in torchscale imports it but the top-level entry points.
"""
