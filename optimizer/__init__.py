"""spiralpir optimizer: parameters, models, Z3 search, code generation and the CLI."""
