"""`spiralpir calibrate --suite SPEC` parsing (cli/suite_spec.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
from spiralpir.optimizer.cli.suite_spec import parse_suite
from spiralpir.optimizer.errors import SpiralpirError
from spiralpir.optimizer.measure.validation import SUITE
from spiralpir.optimizer.params.variants import VARIANTS


def test_items_and_defaults() -> None:
    spec = parse_suite("fit, validate,store=out/t,records=a,records=b,run=p.json:r.json,"
                       "shapes=2e14x32b+2e16x1kb,variants=spiral+streampack,trials=5,"
                       "max-db-gib=0.5,threads=2,replan")
    assert spec.fit and spec.validate and spec.replan and not spec.twins
    assert spec.store == Path("out/t") and spec.records == [Path("a"), Path("b")]
    assert spec.run == [(Path("p.json"), Path("r.json"))]
    assert spec.shapes == ["2e14x32b", "2e16x1kb"]
    assert spec.variants == ["spiral", "stream_pack"]
    assert (spec.trials, spec.repeat, spec.max_db_gib, spec.threads) == (5, 2, 0.5, 2)
    plain = parse_suite("validate")
    assert not plain.fitting and plain.shapes == [s.name for s in SUITE]
    assert plain.variants == list(VARIANTS) and plain.threads == 1
    assert parse_suite("records=x").fitting and parse_suite("instance=g").fitting


@pytest.mark.parametrize("text, needle", [
    ("", "give fit"), ("replan", "give fit"), ("fit=1", "takes no value"),
    ("validate,nope", "expected one of"), ("validate,colour=red", "unknown"),
    ("validate,trials=0", ">= 1"), ("validate,max-db-gib=0", "> 0"),
    ("validate,repeat=two", "not a number"), ("run=a.json", "PARAMS.json:REPORT.json"),
    ("validate,variants=spiral+nope", "'nope'"),
])
def test_bad_items_are_named(text: str, needle: str) -> None:
    with pytest.raises(SpiralpirError, match=needle):
        parse_suite(text)
