"""What runs inside every rank of a benchmark cell (started by torchrun)."""
