"""The project's user-facing error type, re-exported (the estimator depends on nothing else
from the optimizer)."""

from spiralpir.optimizer.errors import SpiralpirError

__all__ = ["SpiralpirError"]
