"""No test draws from an unseeded or per-process source: randomness comes from the `seed`/`rng`
fixtures (tests/conftest.py), so a failure reruns with the seed it prints."""

from __future__ import annotations

import re
from pathlib import Path

TESTS = Path(__file__).resolve().parent
# the global generator, an OS seed, hash() (randomised per process), numpy's global state
UNSEEDED = re.compile(
    r"(?<![\w.])random\.(random|randint|randrange|randbytes|choice|choices|sample|shuffle|"
    r"uniform|getrandbits|seed)\("
    r"|random\.Random\(\s*\)|Random\([^)]*hash\(|os\.urandom\(|secrets\.|SystemRandom"
    r"|np\.random\.(?!default_rng\(\w)\w+\(|default_rng\(\s*\)")


def offending_lines(text: str) -> list[str]:
    return [line.strip() for line in text.splitlines()
            if UNSEEDED.search(line) and not line.lstrip().startswith("#")]


def test_pattern_finds_what_it_should() -> None:
    bad = ["x = random.randrange(5)", "rng = random.Random()", "os.urandom(8)",
           "random.Random(hash(v) % 9)", "np.random.rand(3)", "np.random.default_rng()"]
    good = ["rng.randrange(5)", "random.Random(seed)", "np.random.default_rng(seed)",
            "rng: random.Random"]
    assert all(offending_lines(t) for t in bad)
    assert not any(offending_lines(t) for t in good)


def test_tests_draw_only_from_seeded_generators() -> None:
    """Every tests/**/test_*.py, conftest.py and helper module (benchmark and measurement
    scripts, which are not tests, excepted)."""
    found = {}
    for path in sorted(TESTS.rglob("*.py")):
        if path.name.startswith(("bench_", "measure_")) or path == Path(__file__):
            continue
        if path.name in ("store_torture.py", "update_torture.py", "keyword_torture.py"):
            continue  # a fresh seed per run, printed
        lines = offending_lines(path.read_text())
        if lines:
            found[str(path.relative_to(TESTS))] = lines
    assert not found, found
