"""`python -m spiralpir.optimizer.cli`: the `spiralpir` command."""

from spiralpir.optimizer.cli.main import main

main()
