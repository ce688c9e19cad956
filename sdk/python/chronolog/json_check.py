"""Checks of JSON the SDK sends."""

from typing import Any, Mapping, Optional
import math


def non_finite(value: Any, path: str) -> Optional[str]:
    """The first float in ``value`` that is not finite, as "<path>: nan is not a JSON number"; None when there is none."""
    if isinstance(value, float):
        return None if math.isfinite(value) else f"{path}: {value} is not a JSON number"
    if isinstance(value, Mapping):
        items = value.items()
    elif isinstance(value, (list, tuple)):
        items = enumerate(value)
    else:
        return None
    for key, item in items:
        problem = non_finite(item, f"{path}.{key}" if isinstance(key, str) else f"{path}[{key}]")
        if problem:
            return problem
    return None
