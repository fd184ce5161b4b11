"""The interfaces, on floors that import only down: the shared number formatting
(`formatting.py`), the report (one model, a file renderer per format), the console
(everything printed to a terminal), the library API and the CLI (its twin front door).

Layer 4 (presentation and entry points) of docs/architecture.md: imports everything below it;
nothing in torchscale imports it but the top-level entry points.
"""
