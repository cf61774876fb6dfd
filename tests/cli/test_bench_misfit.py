"""`bench` says when the machine profile does not describe this machine: a measured total more
than twice or less than half the profile's estimate names the ratio, the profile and
`spiralpir calibrate`; within that band (a loaded machine's noise) it says nothing."""

from __future__ import annotations

import pytest
from spiralpir.optimizer.cli.cmd_bench import PROFILE_MISFIT, profile_misfit
from spiralpir.optimizer.models.profile import Profile


@pytest.mark.parametrize("measured, shown", [(0.07, "7.00x"), (0.0049, "0.49x"),
                                             (0.0201, "2.01x")])
def test_a_total_off_by_more_than_the_factor_names_ratio_profile_and_calibrate(
        measured: float, shown: str) -> None:
    profile = Profile.shipped()
    note = profile_misfit({"total": (0.01, measured)}, profile)
    assert note is not None
    assert shown in note and profile.describe() in note and "spiralpir calibrate" in note


@pytest.mark.parametrize("measured", [0.01, 0.0199, 0.0051, 0.01 * PROFILE_MISFIT])
def test_a_total_within_the_factor_says_nothing(measured: float) -> None:
    assert profile_misfit({"total": (0.01, measured)}, Profile.shipped()) is None


def test_a_missing_estimate_or_measurement_says_nothing() -> None:
    assert profile_misfit({"total": (0.0, 0.05)}, Profile.shipped()) is None
    assert profile_misfit({"total": (0.05, 0.0)}, Profile.shipped()) is None
