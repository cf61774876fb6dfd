"""The project's exception type, defined here at the bottom layer so that the estimator needs
nothing from the optimizer; ``spiralpir.optimizer.errors`` re-exports it.

Every user-facing failure raises it with an actionable message."""

__all__ = ["SpiralpirError"]


class SpiralpirError(Exception):
    """A failure the user can act on; the CLI prints it as one line on stderr and exits non-zero."""
