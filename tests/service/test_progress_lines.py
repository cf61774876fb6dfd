"""Progress lines for logs: a line per tenth of the work or per period, none for a quick step."""

from __future__ import annotations

from spiralpir.optimizer.service.progress_lines import QUIET, ProgressLines


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_a_line_per_tenth_after_the_quiet_start() -> None:
    clock, lines = Clock(), []
    progress = ProgressLines("preprocessing database", lines.append, clock, period=5.0)
    progress(300, 1000)  # within the quiet start: nothing
    assert lines == []
    clock.now += QUIET
    for done in range(301, 1001):
        progress(done, 1000)
    # where it stands once the quiet start is over (30%), then one line per tenth
    assert [ln.split(":")[1].split("%")[0].strip() for ln in lines] == \
        ["30", "40", "50", "60", "70", "80", "90", "100"]
    assert lines[-1] == f"preprocessing database: 100% (1,000/1,000), {QUIET:.1f} s"


def test_a_slow_step_is_never_silent_for_a_period() -> None:
    clock, lines = Clock(), []
    progress = ProgressLines("saving", lines.append, clock, period=5.0)
    for k in range(1, 40):
        clock.now += 1.0
        progress(k, 10_000)  # far below a tenth
    # a line about every 5 s once the quiet start is over
    assert 6 <= len(lines) <= 8, lines
    assert all(ln.startswith("saving: 0% (") for ln in lines)
