"""`python -m torchscale` is the same program as the `torchscale` console script.

Layer 4 (presentation) of docs/architecture.md: imports only from layers below and its own.
"""

from torchscale.interfaces.cli.app import main

if __name__ == "__main__":
    main()
