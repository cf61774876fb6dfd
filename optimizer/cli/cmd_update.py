"""`spiralpir update`: change records of an index database or keys of a keyword table, offline
(the files, with no server running on them) or online (a running server's POST
/v1/admin/update).

CHANGES is JSON Lines, one change a line: {"index": I, "value_hex": "…"} or
{"index": I, "value": "text"}; for a keyword build (its keyword.json) {"key": K, "value": V}
(or "value_hex", "value_base64") and {"key": K, "delete": true} (service/changes.py). The batch
is checked whole first; only the plaintexts holding changed records (slots) are encoded again
(service/db_updates.py, service/keyword_updates.py).
"""

from __future__ import annotations

import json
from pathlib import Path

import click
from spiralpir.optimizer.cli.keyword_options import keyword_input_options, keyword_options
from spiralpir.optimizer.errors import SpiralpirError
from spiralpir.optimizer.service import changes, db_updates, store
from spiralpir.optimizer.service import records as database
from spiralpir.optimizer.service.admin_client import send_update
from spiralpir.optimizer.service.admin_http import read_token
from spiralpir.optimizer.service.builds import open_build
from spiralpir.optimizer.service.db_lock import DbLock
from spiralpir.optimizer.service.keyword_input import KeywordOptions
from spiralpir.optimizer.service.keyword_server import KEYWORD_FILE, check_fits, read_shape
from spiralpir.optimizer.service.keyword_updates import open_table


@click.command(name="update")
@click.option("--changes", "changes_path", required=True,
              type=click.Path(dir_okay=False, path_type=Path), help="CHANGES (JSON Lines).")
@click.option("--server", "url", default=None, help="Online: the URL of a server started with "
              "--admin-token-file.")
@click.option("--admin-token-file", type=click.Path(dir_okay=False, path_type=Path),
              default=None, help="Online: the file holding the server's admin token.")
@click.option("--build", "source_dir", type=click.Path(file_okay=False, path_type=Path),
              default=None, help="Offline: generated/NAME.")
@click.option("--db", "db_path", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Offline: the binary records file.")
@click.option("--record-size", type=int, default=None,
              help="Offline: record size of the file (default: the build's).")
@click.option("--preprocessed", type=click.Path(path_type=Path), default=None,
              help="Offline: the store to patch (default: DB.NAME.spiralpir-db next to DB).")
@click.option("--no-cache", is_flag=True, help="Offline: patch no store.")
@click.option("--threads", type=int, default=0, help="Offline: encoding threads (0: all).")
@click.option("--ci", is_flag=True, help="Offline: use the build's CI-sized twin.")
@click.option("--build-dir", type=click.Path(file_okay=False, path_type=Path), default=None)
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
@click.option("--keyword-table", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Offline: --db is the key file of a keyword table of this shape (default: "
              "the build's keyword.json if it has one).")
@keyword_input_options
def update(changes_path: Path, url: str | None, admin_token_file: Path | None,
           source_dir: Path | None, db_path: Path | None, record_size: int | None,
           preprocessed: Path | None, no_cache: bool, threads: int, ci: bool,
           build_dir: Path | None, as_json: bool, keyword_table: Path | None,
           base64_values: bool, key_column: str, value_column: str) -> None:
    """Apply CHANGES to a database: --server URL --admin-token-file F (online), or --build B
    --db D (offline)."""
    if url is not None:
        if admin_token_file is None:
            raise SpiralpirError("--server needs --admin-token-file")
        if source_dir or db_path:
            raise SpiralpirError("give either --server (online) or --build and --db (offline)")
        report = send_update(url, read_token(admin_token_file), changes_path)
    else:
        if source_dir is None or db_path is None:
            raise SpiralpirError("give --server URL --admin-token-file F (online), or --build "
                                 "and --db (offline)")
        elif keyword_table is not None or (source_dir / KEYWORD_FILE).is_file():
            report = offline_keyword(source_dir, keyword_table or source_dir / KEYWORD_FILE,
                                     db_path, changes_path, preprocessed, no_cache, threads,
                                     ci, build_dir,
                                     keyword_options(base64_values, key_column, value_column))
        else:
            report = offline(source_dir, db_path, changes_path, record_size, preprocessed,
                             no_cache, threads, ci, build_dir)
    if as_json:
        click.echo(json.dumps(report, sort_keys=True))
        return
    secs = report.get("seconds", {})
    click.echo(f"database version {report['version']}: {report['records']} record(s) in "
               f"{report['plaintexts']} plaintext(s), store "
               + ("patched" if report.get("store_patched") else "not patched")
               + (f"; {report['keys']} keys ({report['inserted']} inserted, "
                  f"{report['replaced']} replaced, {report['deleted']} deleted, "
                  f"{report['moves']} cuckoo moves)" if "keys" in report else "") + "; "
               + ", ".join(f"{k} {v * 1e3:.1f} ms" for k, v in secs.items()))


def offline(source_dir: Path, db_path: Path, changes_path: Path, record_size: int | None,
            preprocessed: Path | None, no_cache: bool, threads: int, ci: bool,
            build_dir: Path | None) -> dict[str, object]:
    build = open_build(source_dir, build_dir, ci=ci)
    records = database.read_records(db_path, build.record_size, record_size)
    db_updates.check_updatable(records)
    lock = DbLock(db_path, writer=True)
    try:
        tag = build.name + ("_ci" if ci else "")
        store_path = None if no_cache else (preprocessed or store.default_path(db_path, tag))

        def log(msg: str) -> None:
            click.echo(msg, err=True)

        files, fitted, version = db_updates.open_files(build, db_path, records, store_path, log)
        batch = changes.read(str(changes_path), fitted.num_records, records.record_size)
        updater = db_updates.Updater(files, version, None, threads, log)
        return updater.apply(batch).to_json()
    finally:
        lock.close()


def offline_keyword(source_dir: Path, table_path: Path, db_path: Path, changes_path: Path,
                    preprocessed: Path | None, no_cache: bool, threads: int, ci: bool,
                    build_dir: Path | None, opts: KeywordOptions) -> dict[str, object]:
    """A keyword build: the table of key file ``db_path`` (stored next to it, see
    service/keyword_files.py) takes the batch."""
    build = open_build(source_dir, build_dir, ci=ci)
    tag = build.name + ("_ci" if ci else "")
    store_path = None if no_cache else (preprocessed or store.default_path(db_path, tag))

    def log(msg: str) -> None:
        click.echo(msg, err=True)

    text = changes.read_text(str(changes_path))
    shape = read_shape(table_path)
    check_fits(build, shape.rows, shape.columns, shape.slots, shape.slot_size, str(table_path))
    stored = open_table(build, shape, db_path, opts, store_path, log, writer=True)
    try:
        return stored.updater(None, threads, log).apply_text(text, str(changes_path))
    finally:
        stored.close()
