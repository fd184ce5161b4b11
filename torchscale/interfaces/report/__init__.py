"""Rendering results for people: the terminal now; HTML, PDF and Markdown from the same data."""
