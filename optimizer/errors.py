"""The project's exception type, re-exported from the bottom layer (``spiralpir.estimator.errors``,
where it is defined so that the estimator depends on nothing from the optimizer)."""

from spiralpir.estimator.errors import SpiralpirError

__all__ = ["SpiralpirError"]
