"""`python -m torchscale` is the same program as the `torchscale` console script."""

from torchscale.cli.app import main

if __name__ == "__main__":
    main()
