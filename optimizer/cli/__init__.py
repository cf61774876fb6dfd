"""The `spiralpir` command line: click commands and human rendering only (cli/main.py holds
the group; `spiralpir.optimizer.cli:main` is the console script)."""

from spiralpir.optimizer.cli.main import cli, main

__all__ = ["cli", "main"]
