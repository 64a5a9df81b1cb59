"""Numbers for results.json: finite floats or None, and a mean with its spread."""

import math

import numpy as np


def finite(value):
    """``value`` as a float, or None when it is not a finite number.

    Example:
    >>> finite(np.float32(0.5)), finite(float("nan")), finite(None)
    (0.5, None, None)
    """
    if value is None:
        return None
    value = float(value)
    return value if math.isfinite(value) else None


def spread(values):
    """``{"mean", "std"}`` of ``values``: the mean and the sample standard
    deviation (``ddof=1``; 0 for a single value).

    Example:
    >>> spread([0.5, 0.7, 0.6])
    {'mean': 0.6, 'std': 0.1}
    """
    values = np.asarray(values, np.float64)
    if values.size == 0:
        raise ValueError("No values to summarise.")
    std = float(np.std(values, ddof=1)) if values.size > 1 else 0.0
    return {"mean": round(float(np.mean(values)), 12), "std": round(std, 12)}
