"""The `spiralpir` command: a click group whose subcommands live one per module.

Subcommands are imported lazily so that `spiralpir --help` and cheap commands do not pay
for heavy imports (Z3, aiohttp) they do not use.
"""

from __future__ import annotations

import importlib
import sys

import click
from spiralpir.optimizer.errors import SpiralpirError
from spiralpir.optimizer.plan.errors import InvalidOption, NoFeasibleParameters, NoFeasibleVariant

# command name -> (module, attribute holding the click command)
COMMANDS: dict[str, tuple[str, str]] = {
    "security": ("spiralpir.estimator.cli", "security"),
    "plan": ("spiralpir.optimizer.cli.cmd_plan", "plan"),
    "calibrate": ("spiralpir.optimizer.cli.cmd_calibrate", "calibrate"),
    "generate": ("spiralpir.optimizer.cli.cmd_generate", "generate"),
    "build": ("spiralpir.optimizer.cli.cmd_build", "build"),
    "bench": ("spiralpir.optimizer.cli.cmd_bench", "bench"),
    "sample-db": ("spiralpir.optimizer.cli.cmd_sample_db", "sample_db"),
    "serve": ("spiralpir.optimizer.cli.cmd_serve", "serve"),
    "shard": ("spiralpir.optimizer.cli.cmd_shard", "shard"),
    "shard-model": ("spiralpir.optimizer.cli.cmd_shard_model", "shard_model"),
    "query": ("spiralpir.optimizer.cli.cmd_query", "query"),
    "update": ("spiralpir.optimizer.cli.cmd_update", "update"),
    "demo": ("spiralpir.optimizer.cli.cmd_demo", "demo"),
}


class LazyGroup(click.Group):
    """A group that imports a subcommand's module only when that subcommand runs."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(COMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in COMMANDS:
            return None
        module_name, attr = COMMANDS[cmd_name]
        try:
            module = importlib.import_module(module_name)
        except ModuleNotFoundError as exc:
            if exc.name != module_name:
                raise
            return _unavailable(cmd_name)
        command = getattr(module, attr)
        assert isinstance(command, click.Command)
        return command


def _unavailable(name: str) -> click.Command:
    @click.command(name=name, help="(not available in this build)")
    def missing() -> None:
        raise SpiralpirError(f"the '{name}' command is not available in this version of spiralpir")

    return missing


@click.group(cls=LazyGroup)
@click.version_option(package_name="spiralpir")
def cli() -> None:
    """spiralpir: single-server private information retrieval with the SPIRAL family."""


def flag(option: str) -> str:
    """The command-line flag of a plan option (`record_size` -> `--record-size`)."""
    return "--" + option.replace("_", "-")


def message(exc: SpiralpirError) -> str:
    """The one-line error, with the library's option names spelled as this CLI's flags."""
    if isinstance(exc, InvalidOption):
        return f"{flag(exc.option)} {exc.problem}"
    if isinstance(exc, NoFeasibleParameters):
        why = exc.why
        caps = ", ".join(f"{flag(name)} {_number(value)}" for name, value in why.caps.items())
        memory = (" (--max-db-bytes is this machine's database budget unless given; 'none' "
                  "lifts it)" if "max_db_bytes" in why.caps else "")
        return (f"no SPIRAL parameters for {why.records} records of {why.record_size} bytes at "
                f">= {why.min_security:g}-bit security and failure <= "
                f"2^{why.correctness_log2:g}" + (f" under {caps}" if caps else "")
                + "; relax a cap or --min-security" + memory)
    if isinstance(exc, NoFeasibleVariant):
        return (f"variant auto: no variant has feasible parameters ({', '.join(exc.failed)}); "
                "relax a cap or --min-security")
    return str(exc)


def _number(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else f"{value:g}"


def usage_message(exc: click.UsageError) -> str:
    """click's usage error as one line, naming the command and where to read its usage."""
    command = exc.ctx.command_path if exc.ctx is not None else "spiralpir"
    text = " ".join(exc.format_message().split())
    return f"{command}: {text} (see '{command} --help')"


def main() -> None:
    try:
        cli.main(standalone_mode=False)
    except SpiralpirError as exc:
        click.echo(f"spiralpir: error: {message(exc)}", err=True)
        sys.exit(2)
    except click.exceptions.NoArgsIsHelpError as exc:  # bare `spiralpir`: the help, as before
        exc.show()
        sys.exit(exc.exit_code)
    except click.UsageError as exc:
        click.echo(f"spiralpir: error: {usage_message(exc)}", err=True)
        sys.exit(2)
    except click.exceptions.Abort:
        click.echo("spiralpir: aborted", err=True)
        sys.exit(130)
    except click.ClickException as exc:  # click's other errors (e.g. a file): one line too
        click.echo(f"spiralpir: error: {' '.join(exc.format_message().split())}", err=True)
        sys.exit(exc.exit_code)
    except click.exceptions.Exit as exc:
        sys.exit(exc.exit_code)
