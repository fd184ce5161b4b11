"""The Typer command-line interface. The only layer that turns errors into exit codes.

Layer 4 (presentation) of docs/architecture.md: imports only from layers below and its own.
"""
