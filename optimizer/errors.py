"""The project's exception type: every user-facing failure raises it with an actionable message."""


class SpiralpirError(Exception):
    """A failure the user can act on; the CLI prints it as one line on stderr and exits non-zero."""
