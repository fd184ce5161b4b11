"""CIFAR-100 from the user's own files (the "python version"), read safely, never downloaded.

File layout and safety: docs/data.md, "CIFAR-100" (only `<data.dir>/train` is read). A pickle
can run arbitrary code when loaded, and these files come from the internet: the Unpickler
resolves only the few globals a pickled numpy array needs (_ALLOWED); anything else in the file
is refused with a DataError, never executed.
"""

from __future__ import annotations

import io
import pickle
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from torchscale.contracts.errors import DataError, describe_os_error

URL = "https://www.cs.toronto.edu/~kriz/cifar-100-python.tar.gz"
TRAIN_FILE = "train"
IMAGE_SIDE = 32
IMAGE_BYTES = 3 * IMAGE_SIDE * IMAGE_SIDE
CLASSES = 100
# per-channel mean and std of the CIFAR-100 training images (0..1 scale), for normalising
MEAN = (0.5071, 0.4865, 0.4409)
STD = (0.2673, 0.2564, 0.2762)

# the only globals a CIFAR pickle may name: numpy array reconstruction (numpy 1 and 2 module
# paths, protocols 2-5) and the latin-1 bytes encoding of protocol 2
_ALLOWED = {
    ("numpy.core.multiarray", "_reconstruct"),
    ("numpy._core.multiarray", "_reconstruct"),
    ("numpy.core.numeric", "_frombuffer"),
    ("numpy._core.numeric", "_frombuffer"),
    ("numpy", "ndarray"),
    ("numpy", "dtype"),
    ("_codecs", "encode"),
}


def where_to_put(directory: Path) -> str:
    return (
        f"put the CIFAR-100 python files in {directory} (files train, test, meta: download "
        f"{URL} and unpack it, then point data.dir at the cifar-100-python folder)"
    )


class _SafeUnpickler(pickle.Unpickler):
    """Resolves only the globals in _ALLOWED (numpy 1 paths read as numpy 2's where needed)."""

    def find_class(self, module: str, name: str) -> Any:
        if (module, name) not in _ALLOWED:
            raise pickle.UnpicklingError(f"refused global {module}.{name}")
        if module.startswith("numpy.core."):
            import numpy as np

            if int(np.__version__.split(".")[0]) >= 2:  # numpy.core is a deprecated alias
                module = "numpy._core." + module.split(".", 2)[2]
        return super().find_class(module, name)


def safe_load(data: bytes) -> Any:
    """Unpickle `data` resolving only numpy array globals (py2 strings read as bytes)."""
    return _SafeUnpickler(io.BytesIO(data), encoding="bytes").load()


@dataclass(frozen=True)
class Cifar100:
    """The training images as one (N, 3, 32, 32) uint8 array and their fine labels."""

    images: Any  # numpy uint8 (N, 3, 32, 32)
    labels: Any  # numpy int64 (N,)
    path: Path
    file_bytes: int

    def __len__(self) -> int:
        return int(self.labels.shape[0])


def _field(content: dict[Any, Any], key: str) -> Any:
    return next((content[k] for k in (key.encode(), key) if k in content), None)


def load_train(directory: str | Path) -> Cifar100:
    """Read and check `<directory>/train`; DataError (one line) saying what is wrong and where
    the files go."""
    import numpy as np

    root = Path(directory).expanduser()
    path, fix = root / TRAIN_FILE, where_to_put(root)
    if not root.is_dir():
        raise DataError(f"data.dir {root} does not exist: {fix}")
    if not path.is_file():
        raise DataError(f"{path} is missing: {fix}")
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise DataError(f"{path}: cannot read it: {describe_os_error(exc)}") from None
    try:
        content = safe_load(raw)
    except (pickle.UnpicklingError, EOFError, ValueError, TypeError, AttributeError) as exc:
        raise DataError(f"{path} is not a CIFAR-100 python file ({exc}): {fix}") from None
    if not isinstance(content, dict):
        raise DataError(f"{path} is not a CIFAR-100 python file (not a dict): {fix}")
    data, labels = _field(content, "data"), _field(content, "fine_labels")
    if data is None or labels is None:
        raise DataError(f"{path} has no 'data' and 'fine_labels' (a CIFAR-10 file?): {fix}")
    images = np.asarray(data)
    label_array = np.asarray(labels, dtype=np.int64)
    if images.ndim != 2 or images.shape[1] != IMAGE_BYTES or images.dtype != np.uint8:
        raise DataError(
            f"{path}: 'data' is {images.dtype} {images.shape}, not uint8 N x {IMAGE_BYTES}"
        )
    if label_array.shape != (images.shape[0],):
        raise DataError(f"{path}: {label_array.shape[0]} labels for {images.shape[0]} images")
    if images.shape[0] == 0:
        raise DataError(f"{path} holds no images")
    if label_array.min() < 0 or label_array.max() >= CLASSES:
        raise DataError(f"{path}: fine labels outside 0..{CLASSES - 1}")
    return Cifar100(images.reshape(-1, 3, IMAGE_SIDE, IMAGE_SIDE), label_array, path, len(raw))
