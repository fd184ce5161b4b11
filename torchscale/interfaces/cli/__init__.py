"""The Typer command-line interface. The only layer that turns errors into exit codes."""
