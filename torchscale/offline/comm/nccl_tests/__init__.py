"""Import NVIDIA nccl-tests output (its text table, or the JSON its `-J` option writes) as a
CommResult, so a `torchscale comm` run and an nccl-tests run sit side by side in one report.

One module per step of an import:

- `text_scan`: the text as printed or pasted (every version read is described there);
- `json_scan`: the `-J` document;
- `op_and_ranks`: the run's op and rank count, stated or inferred (each inference recorded);
- `checks`: every row and the footer against nccl-tests' own definitions;
- `result`: the checked runs as one CommResult, with its warnings;
- `read`: the entry points below; `records` and `names`: the run record both readers fill, and
  nccl-tests' names for torchscale's ops and dtypes.

Every figure is kept as printed and checked against its own definition
(analysis/nccl_bandwidth.py): a row that disagrees is named in a warning, and a file where most
rows disagree is refused, since its op or its rank count must then be wrong.
"""

from torchscale.offline.comm.nccl_tests.names import (
    NON_REDUCING_OPS,
    PROGRAM_OPS,
    REDUCING_OPS,
    ROOTED_OPS,
    TYPES,
)
from torchscale.offline.comm.nccl_tests.read import (
    default_run_id,
    parse_json,
    parse_text,
    read_nccl_tests,
)
from torchscale.offline.comm.nccl_tests.records import NcclTestsFormatError

__all__ = [
    "NON_REDUCING_OPS",
    "PROGRAM_OPS",
    "REDUCING_OPS",
    "ROOTED_OPS",
    "TYPES",
    "NcclTestsFormatError",
    "default_run_id",
    "parse_json",
    "parse_text",
    "read_nccl_tests",
]
