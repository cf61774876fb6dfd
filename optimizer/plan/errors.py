"""The planner's typed failures: which option is wrong, or which constraints leave no plan.

They carry fields, not command-line spellings: the CLI (cli/) names its own flags when it
prints them; the Python API reads the fields.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from spiralpir.optimizer.errors import SpiralpirError


class InvalidOption(SpiralpirError):
    """A plan option (by its API name, e.g. `record_size`) has a value the planner rejects."""

    def __init__(self, option: str, problem: str) -> None:
        super().__init__(f"{option} {problem}")
        self.option = option
        self.problem = problem


@dataclass
class Infeasibility:
    """What a search found no parameters under."""

    records: int
    record_size: int
    min_security: float
    correctness_log2: float
    caps: dict[str, float] = field(default_factory=dict)  # option name -> its finite value


class NoFeasibleParameters(SpiralpirError):
    """No parameter set meets the security, correctness and size constraints."""

    def __init__(self, why: Infeasibility) -> None:
        caps = ", ".join(f"{name} {value:g}" for name, value in why.caps.items())
        super().__init__(
            f"no SPIRAL parameters for {why.records} records of {why.record_size} bytes at "
            f">= {why.min_security:g}-bit security and failure <= 2^{why.correctness_log2:g}"
            + (f" under {caps}" if caps else "") + "; relax a cap or min_security")
        self.why = why


class NoFeasibleBatch(SpiralpirError):
    """No number of copies w gives bucket databases with parameters under the constraints."""

    def __init__(self, records: int, k: int, failed: list[tuple[int, int, SpiralpirError]]) -> None:
        whys = "; ".join(f"w = {w} ({b} buckets): {err}" for w, b, err in failed)
        super().__init__(f"no batch layout of {records} records for batches of {k}: {whys} "
                         "(a bucket's max_db_bytes is the batch's shared by its buckets)")
        self.failed = failed


class NoFeasibleVariant(SpiralpirError):
    """variant auto: no variant has parameters meeting the constraints."""

    def __init__(self, failed: list[str]) -> None:
        super().__init__(f"variant auto: no variant has feasible parameters "
                         f"({', '.join(failed)}); relax a cap or min_security")
        self.failed = failed
