"""Property tests of every reader of a user's local file: parameters files, plan documents,
machine profiles, databases (.jsonl, binary, directories) and stream directories. Random and
mutated contents are either accepted or refused with one SpiralpirError line naming the file;
any other exception (a traceback for the user) fails the test. Hypothesis runs derandomized
(the same examples every run) with a bounded number of examples per reader."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from mutations import JSON_VALUES, file_contents, mutated_bytes
from spiralpir.estimator.errors import SpiralpirError as EstimatorError
from spiralpir.estimator.spiral import load_params_file
from spiralpir.optimizer.codegen import load_document
from spiralpir.optimizer.errors import SpiralpirError
from spiralpir.optimizer.models.profile import Profile
from spiralpir.optimizer.service import records
from spiralpir.optimizer.service.pir_server import stream_block_paths

REPO = Path(__file__).resolve().parents[2]
DEMO_PARAMS = json.loads((REPO / "generated" / "demo" / "params.json").read_text())
PROFILE = json.loads((REPO / "optimizer" / "models" / "profiles" / "default.json").read_text())
ITEM = 32  # the demo build's record size

BOUNDED = settings(max_examples=300, deadline=None, derandomize=True, database=None,
                   suppress_health_check=[HealthCheck.function_scoped_fixture,
                                          HealthCheck.too_slow])


def accepted_or_named(path: Path, read: Callable[[], Any]) -> bool:
    """read() either succeeds (True) or raises a one-line SpiralpirError naming `path`."""
    try:
        read()
    except (SpiralpirError, EstimatorError) as exc:
        msg = str(exc)
        assert "\n" not in msg, f"multi-line error: {msg!r}"
        assert path.name in msg, f"error does not name the file {path.name}: {msg!r}"
        return False
    return True


def write(tmp_path: Path, name: str, data: bytes) -> Path:
    path = tmp_path / name
    path.write_bytes(data)
    return path


def test_estimator_error_is_the_optimizer_error() -> None:
    """The readers below catch one class: the estimator's error must be (or derive from) it."""
    assert issubclass(EstimatorError, SpiralpirError) or EstimatorError is SpiralpirError


@BOUNDED
@given(data=file_contents(DEMO_PARAMS))
def test_parameters_file(tmp_path: Path, data: bytes) -> None:
    path = write(tmp_path, "params.json", data)
    accepted_or_named(path, lambda: load_params_file(path))


@BOUNDED
@given(data=file_contents(DEMO_PARAMS))
def test_plan_document(tmp_path: Path, data: bytes) -> None:
    path = write(tmp_path, "plan.json", data)
    accepted_or_named(path, lambda: load_document(path))


@BOUNDED
@given(data=file_contents(PROFILE))
def test_machine_profile(tmp_path: Path, data: bytes) -> None:
    path = write(tmp_path, "profile.json", data)
    accepted_or_named(path, lambda: Profile.load(path))


def test_readers_accept_their_valid_documents(tmp_path: Path) -> None:
    """The seeds of the mutations are accepted (else the properties above test nothing)."""
    params = write(tmp_path, "params.json", json.dumps(DEMO_PARAMS).encode())
    assert accepted_or_named(params, lambda: load_params_file(params))
    assert accepted_or_named(params, lambda: load_document(params))
    profile = write(tmp_path, "profile.json", json.dumps(PROFILE).encode())
    assert accepted_or_named(profile, lambda: Profile.load(profile))


# one JSON Lines record: a string or a one-key object, valid or not
_JSONL_VALUE = st.one_of(
    st.text(max_size=40),
    st.builds(lambda k, v: {k: v}, st.sampled_from(["text", "hex", "base64", "other"]),
              st.text(max_size=48) | JSON_VALUES),
    JSON_VALUES,
)


@st.composite
def jsonl_files(draw: st.DrawFn) -> bytes:
    lines = draw(st.lists(_JSONL_VALUE, max_size=6))
    text = "\n".join(json.dumps(v, ensure_ascii=draw(st.booleans())) for v in lines).encode()
    return draw(mutated_bytes(text)) if draw(st.booleans()) else text


@BOUNDED
@given(data=jsonl_files())
def test_jsonl_database(tmp_path: Path, data: bytes) -> None:
    path = write(tmp_path, "db.jsonl", data)
    accepted_or_named(path, lambda: records.read_records(path, ITEM))


@BOUNDED
@given(data=st.binary(max_size=200), record_size=st.none() | st.integers(1, 70))
def test_binary_database(tmp_path: Path, data: bytes, record_size: int | None) -> None:
    path = write(tmp_path, "db.bin", data)
    accepted_or_named(path, lambda: records.read_records(path, ITEM, record_size))


# file names with ASCII and other Unicode digits and letters
_NAMES = st.text(st.characters(categories=["Nd", "No", "Ll"], max_codepoint=0x2000)
                 | st.sampled_from("0123456789-_"), min_size=1, max_size=6)


@BOUNDED
@given(files=st.dictionaries(_NAMES, st.binary(max_size=40), min_size=1, max_size=5))
def test_directory_database(tmp_path: Path, files: dict[str, bytes]) -> None:
    root = tmp_path / "dbdir"
    root.mkdir(exist_ok=True)
    for old in root.iterdir():
        old.unlink()
    for name, data in files.items():
        (root / name).write_bytes(data)
    accepted_or_named(root, lambda: records.read_records(root, ITEM))


@BOUNDED
@given(names=st.lists(_NAMES, min_size=1, max_size=5, unique=True))
def test_stream_directory(tmp_path: Path, names: list[str]) -> None:
    root = tmp_path / "stream"
    root.mkdir(exist_ok=True)
    for old in root.iterdir():
        old.unlink()
    for name in names:
        (root / name).write_bytes(b"x")
    accepted_or_named(root, lambda: stream_block_paths([root]))
