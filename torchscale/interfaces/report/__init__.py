"""Rendering results for people: the terminal now; HTML, PDF and Markdown from the same data.

Layer 4 (presentation) of docs/architecture.md: imports only from layers below and its own.
"""
