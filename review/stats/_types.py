"""Array aliases shared by the statistics modules."""

from typing import Literal

import numpy as np
import numpy.typing as npt

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]
Weights = Literal["quadratic", "linear"] | None


def as_float(values: npt.ArrayLike) -> FloatArray:
    """Copy-free float64 view of ``values``; ``None`` entries become NaN (missing)."""
    return np.asarray(values, dtype=np.float64)
