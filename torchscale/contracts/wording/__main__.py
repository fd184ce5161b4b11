"""`python -m torchscale.contracts.wording --markdown [--write docs/results.md]`: the finding
codes' table of docs/results.md, made from the catalogue (catalogue.py)."""

from __future__ import annotations

import sys

from torchscale.contracts.wording.catalogue import main

if __name__ == "__main__":  # the package imports this module too, looking for phrase tables
    sys.exit(main())
