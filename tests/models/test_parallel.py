"""The multi-thread wall-time model (models/parallel.py): greedy replay of the runtime's
parallel jobs, the stages' parallel structure, the thread scaling of a profile."""

from __future__ import annotations

import math

import pytest
from spiralpir.optimizer.models.cost import (
    STAGES,
    db_reads,
    first_dim_parts,
    params_db_bytes,
    query_bytes,
    scalar_fraction,
    stage_op_counts,
    stage_seconds,
)
from spiralpir.optimizer.models.parallel import (
    makespan,
    parallel_fraction,
    stage_jobs,
    wall_stage_seconds,
)
from spiralpir.optimizer.models.profile import Profile, ThreadScaling
from spiralpir.optimizer.params.parameters import Parameters

BASE = {"variant": "spiral", "poly_len": 2048, "moduli": [268369921, 249561089],
        "noise_width": 6.4, "secret_distribution": "gaussian", "q2_bits": 20, "instances": 1,
        "db_item_size": 64, "records": 100, "record_size": 64, "p": 256, "n": 1, "nu_1": 6,
        "nu_2": 4, "t_gsw": 4, "t_conv": 4, "t_exp_left": 4, "t_exp_right": 9}


def _params(**kw: object) -> Parameters:
    """BASE with changes; records fill the hypercube (every first-dimension row stored)
    unless given."""
    p = Parameters.from_literal({**BASE, **kw})
    return p if "records" in kw else p.replace(records=p.capacity)


def _brute_makespan(tasks: list[float], threads: int) -> float:
    """Greedy list scheduling written out: each task to the thread free first."""
    free = [0.0] * threads
    for w in tasks:
        i = free.index(min(free))
        free[i] += w
    return max(free)


def test_makespan_matches_a_written_out_greedy_schedule() -> None:
    for job in ([(1.0, 7)], [(3.0, 2), (1.0, 5)], [(2.5, 1)], [(1.0, 3), (4.0, 1)]):
        tasks = [w for w, k in job for _ in range(k)]
        for t in (1, 2, 3, 8):
            assert makespan(job, t) == pytest.approx(_brute_makespan(tasks, t)), (job, t)
    assert makespan([(1.0, 3)], 2) == 2.0  # three equal tasks on two threads: two rounds


def test_one_thread_is_the_single_thread_model() -> None:
    p = _params()
    prof = Profile.shipped()
    assert wall_stage_seconds(p, prof, 1) == stage_seconds(p, prof)


def test_folding_rounds_with_one_task_do_not_speed_up() -> None:
    """nu_2 = 1, one instance: one external product, nothing to run in parallel; nu_2 = 4:
    rounds of 8, 4, 2, 1 products on two threads take 4 + 2 + 1 + 1 of 15."""
    assert parallel_fraction(stage_jobs(_params(nu_2=1), Profile.shipped())["folding"], 2) == 1
    frac = parallel_fraction(stage_jobs(_params(nu_2=4), Profile.shipped())["folding"], 2)
    assert frac == pytest.approx(8 / 15)


def test_two_threads_halve_wide_stages_times_the_slowdown() -> None:
    p = _params(instances=4, db_item_size=8192, record_size=8192)
    prof = Profile.shipped()
    cache_all = {**prof.to_dict(), "cache_bytes": 1e15,
                 "threads": {"2": {"slowdown": 1.1, "read_bytes_per_second": 0}}}
    prof = Profile.from_dict(cache_all)
    one, two = stage_seconds(p, prof), wall_stage_seconds(p, prof, 2)
    # the first dimension: instances x prime groups x d/8 equal tasks, an even count
    assert two["first_dimension"] == pytest.approx(one["first_dimension"] / 2 * 1.1)
    for s in STAGES:
        assert two[s] <= one[s] * 1.1 + 1e-15


def test_memory_bound_first_dimension_reads_at_the_threads_bandwidth() -> None:
    p = _params(nu_1=9, nu_2=8)
    doc = Profile.shipped().to_dict()
    doc.update(cache_bytes=1.0, read_bytes_per_second=1e9,
               threads={"2": {"slowdown": 1.0, "read_bytes_per_second": 1.5e9}})
    prof = Profile.from_dict(doc)
    # the database and the tiled query (above this cache too)
    read = params_db_bytes(p) + query_bytes(p.variant, p.poly_len, len(p.moduli), p.n, p.nu_1)
    assert wall_stage_seconds(p, prof, 2)["first_dimension"] == pytest.approx(
        max(read / 1.5e9, stage_seconds(p, prof)["first_dimension"] / 2))
    # no measured bandwidth at 2 threads: twice the single thread's
    doc["threads"] = {"2": {"slowdown": 1.0, "read_bytes_per_second": 0.0}}
    prof = Profile.from_dict(doc)
    assert wall_stage_seconds(p, prof, 2)["first_dimension"] >= params_db_bytes(p) / 2e9


def test_scaling_uses_the_nearest_measured_count_below() -> None:
    doc = Profile.shipped().to_dict()
    doc["threads"] = {"2": {"slowdown": 1.1}, "4": {"slowdown": 1.3}}
    prof = Profile.from_dict(doc)
    assert prof.scaling(1) == ThreadScaling()
    assert prof.scaling(3).slowdown == 1.1 and prof.scaling(16).slowdown == 1.3


def test_expansion_jobs_follow_the_live_cts() -> None:
    """Vanilla: the serial parse, then one job per round, the right gadget's tasks first:
    round 0's one ct as (ct, residue) tasks, the later rounds' live cts one task each."""
    p = _params(nu_1=3, nu_2=2, t_gsw=2)  # digits 4: rounds_right 3, rounds max(4, 3) = 4
    jobs = stage_jobs(p, Profile.shipped())["expansion"]
    counts = [sum(k for _, k in job) for job in jobs]
    assert counts == [1, 1 * 2, 1 + 1, 2 + 2, 4]
    stream = stage_jobs(_params(variant="stream", nu_1=3, nu_2=2, t_gsw=2),
                        Profile.shipped())["expansion"]
    assert stream == [[(1.0, 8 + 4)]]


def test_vanilla_expansion_is_parallel_but_for_its_one_parsed_polynomial() -> None:
    """The serial parse weighs what cost.py charges one query polynomial (2L NTTs and L·d
    parsed residues), in the same unit as the rounds' key-switch tasks: the expansion's
    2-thread share is the serial parse plus the rounds' makespans, near 1/2 when the rounds
    dominate (not near 1, as a parse weighed in another unit would make it)."""
    prof = Profile.shipped()
    p = _params(nu_1=9, nu_2=8)
    jobs = stage_jobs(p, prof)["expansion"]
    L, d = len(p.moduli), p.poly_len
    assert jobs[0] == [(pytest.approx(L * (2 * prof.ntt(d) + d * prof.op_cost("parse", d))), 1)]
    rounds = sum(makespan(j, 1) for j in jobs[1:])
    # the rounds' single-thread work is cost.py's expansion less the parse (stage scale 1)
    one = stage_seconds(p, prof)["expansion"] / prof.scale("expansion")
    assert rounds + makespan(jobs[0], 1) == pytest.approx(one, rel=0.05)
    want = (makespan(jobs[0], 1) + sum(makespan(j, 2) for j in jobs[1:])) / one
    assert parallel_fraction(jobs, 2) == pytest.approx(want, rel=0.05)
    assert parallel_fraction(jobs, 2) < 0.55


def test_three_prime_expansion_tasks_carry_their_repeated_digits() -> None:
    """Three primes: every round runs (ct, residue) tasks, each composing and splitting every
    coefficient itself, so the tasks' single-thread work is cost.py's expansion with its
    repeated wide digits, and a profile charging them makes the stage dearer by exactly their
    count times their cost."""
    doc = Profile.shipped().to_dict()
    doc["op_seconds"] = {**doc["op_seconds"], "redecomp_wide": 0.0, "compose_wide": 5e-9}
    plain = Profile.from_dict(doc)
    doc["op_seconds"] = {**doc["op_seconds"], "redecomp_wide": 7e-9}
    prof = Profile.from_dict(doc)
    p = _params(moduli=[268369921, 249561089, 230686721], nu_1=9, nu_2=8, poly_len=4096)
    for pr in (prof, plain):
        work = sum(makespan(j, 1) for j in stage_jobs(p, pr)["expansion"])
        assert work == pytest.approx(stage_seconds(p, pr)["expansion"] / pr.scale("expansion"),
                                     rel=1e-9)
    extra = (stage_seconds(p, prof)["expansion"] - stage_seconds(p, plain)["expansion"]) \
        / prof.scale("expansion")
    counts = stage_op_counts(p)["expansion"]
    assert counts["redecomp_wide"] > p.t_exp_right * 2 * p.poly_len and counts["decomp"] == 0
    # one task per (ct, residue) in every round
    assert all(k % 3 == 0 for job in stage_jobs(p, prof)["expansion"][1:] for _, k in job)
    assert extra == pytest.approx(counts["redecomp_wide"] * 7e-9, rel=1e-9)
    # each residue's task composes every coefficient: L·d per key switch, d per decomposition
    # elsewhere
    ks = counts["compose"] / (3 * 3 * p.poly_len)
    assert counts["compose_wide"] == pytest.approx(ks * 3 * p.poly_len)
    folding = stage_op_counts(p)["folding"]
    assert folding["compose_wide"] == pytest.approx(folding["decomp_wide"] / p.t_gsw / 3)
    # two primes: nothing repeated, nothing composed to 128 bits
    narrow = stage_op_counts(_params())
    assert narrow["expansion"]["redecomp_wide"] == 0
    assert all(c.get("compose_wide", 0) == 0 for c in narrow.values())


def test_scalar_ops_scale_with_their_own_slowdown() -> None:
    """A stage's wall time at 2 threads: its scalar 128-bit share (three primes) at the
    profile's scalar_slowdown, the rest at slowdown; two primes have no such share; a profile
    without scalar_slowdown uses slowdown for all."""
    doc = Profile.shipped().to_dict()
    doc["threads"] = {"2": {"slowdown": 1.2, "read_bytes_per_second": 0.0}}
    same = Profile.from_dict(doc)
    assert same.scaling(2).scalar == 1.2 and "scalar_slowdown" not in same.to_dict()["threads"]["2"]
    doc["threads"]["2"]["scalar_slowdown"] = 1.0
    prof = Profile.from_dict(doc)
    assert Profile.from_dict(prof.to_dict()).scaling(2) == ThreadScaling(1.2, 0.0, 1.0)
    wide = _params(moduli=[268369921, 249561089, 230686721], nu_1=7, nu_2=5, poly_len=4096,
                   t_exp_left=20, t_exp_right=30, t_conv=10)
    share = scalar_fraction(wide, prof)
    assert 0.5 < share["expansion"] < 1 and share["first_dimension"] == 0
    a, b = wall_stage_seconds(wide, prof, 2), wall_stage_seconds(wide, same, 2)
    for s in ("expansion", "conversion", "folding"):
        assert a[s] == pytest.approx(b[s] * (1 - share[s] + share[s] / 1.2), rel=1e-9)
    narrow = _params()
    assert all(v == 0 for v in scalar_fraction(narrow, prof).values())
    assert wall_stage_seconds(narrow, prof, 2) == wall_stage_seconds(narrow, same, 2)


def test_profile_threads_round_trip_and_checks() -> None:
    doc = Profile.shipped().to_dict()
    doc["threads"] = {"2": {"slowdown": 1.05, "read_bytes_per_second": 2e10}}
    prof = Profile.from_dict(doc)
    assert Profile.from_dict(prof.to_dict()).threads == prof.threads
    for bad, needle in (({"1": {"slowdown": 1}}, "threads.1"),
                        ({"2": {"slowdown": math.inf}}, "threads.2.slowdown"),
                        ({"2": "fast"}, "bad or missing")):
        with pytest.raises(Exception, match=needle):
            Profile.from_dict({**doc, "threads": bad})


def test_implicit_database_reads() -> None:
    """The bench drivers' implicit database: instances repeated, every byte still comes from
    memory; folding indices repeated (an instance over the budget), only the distinct blocks
    of each pass do (phys_j of 2^nu_2, the smallest power of two holding 1 GiB)."""
    p = _params(nu_1=9, nu_2=8)  # 2 GiB in one instance: 8 MiB per folding index
    streamed = params_db_bytes(p)
    assert db_reads(p) == (streamed, streamed)
    assert db_reads(p, implicit_db=True) == (1 << 30, streamed)
    per_j = streamed / 256
    assert db_reads(p, implicit_db=True, repeated_folding=True) == (per_j * 128, streamed / 2)
    doc = Profile.shipped().to_dict()
    # a cache that holds the tiled query (8 MiB), not the database
    doc.update(cache_bytes=float(16 << 20), read_bytes_per_second=1e9, op_seconds={
        **doc["op_seconds"], "fd": 0.0, "fdout": 0.0},
        threads={"2": {"slowdown": 1.0, "read_bytes_per_second": 2e9}})
    prof = Profile.from_dict(doc)
    assert stage_seconds(p, prof, True, True)["first_dimension"] == pytest.approx(
        streamed / 2 / 1e9)
    assert wall_stage_seconds(p, prof, 2, True, True)["first_dimension"] == pytest.approx(
        streamed / 2 / 2e9)


def test_the_report_tells_a_repeated_folding_layout() -> None:
    """validation.repeated_folding: implicit, and one instance larger than the process's peak
    memory (it cannot have held a whole instance)."""
    from spiralpir.optimizer.measure.validation import repeated_folding

    p = _params(nu_1=9, nu_2=8)
    rep = {"implicit_db": True, "preprocessed_db_bytes": params_db_bytes(p),
           "peak_memory_bytes": 1.5 * 2**30}
    assert repeated_folding(p, rep)
    assert not repeated_folding(p, {**rep, "peak_memory_bytes": 3 * 2**30})
    assert not repeated_folding(p, {**rep, "implicit_db": False})


def test_repeated_folding_words_come_from_cache() -> None:
    """An implicit database that repeats folding indices: the words of its distinct blocks
    overlap the memory reads, the repeats (from the core's cache) add their compute after
    them, at every thread count: max(f·words + outputs, memory) + (1 − f)·words."""
    p = _params(nu_1=9, nu_2=8)
    streamed = params_db_bytes(p)
    doc = Profile.shipped().to_dict()
    # a cache that holds the tiled query (8 MiB), not the distinct blocks (256 MiB)
    doc.update(cache_bytes=float(16 << 20), read_bytes_per_second=1e9, stage_scale={},
               threads={"2": {"slowdown": 1.25, "read_bytes_per_second": 2e9}})
    prof = Profile.from_dict(doc)
    ops = stage_op_counts(p)["first_dimension"]
    words = ops["fd"] * prof.op_cost("fd", p.poly_len)
    outputs = ops["fdout"] * prof.op_cost("fdout", p.poly_len)
    # phys_j = 32 of 256 (as a report gives it): f = 1/8 read from memory
    assert db_reads(p, True, True, 32) == (streamed / 256 * 32, streamed / 8)
    memory = streamed / 8 / 1e9
    assert memory > words / 8 + outputs  # the distinct part waits on memory
    assert stage_seconds(p, prof, True, True, 32)["first_dimension"] == pytest.approx(
        memory + words * 7 / 8)
    k = parallel_fraction(stage_jobs(p, prof)["first_dimension"], 2) * 1.25
    assert wall_stage_seconds(p, prof, 2, True, True, 32)["first_dimension"] == pytest.approx(
        max((words / 8 + outputs) * k, streamed / 8 / 2e9) + words * 7 / 8 * k)
    # nothing repeated: the larger of compute and memory, as for a database read once
    assert stage_seconds(p, prof)["first_dimension"] == pytest.approx(
        max(words + outputs, streamed / 1e9))


def test_the_report_gives_its_implicit_layout() -> None:
    """calibrate.report_layout: a driver that reports its implicit layout is taken at its
    word (the folding indices it stores), without the peak-memory guess."""
    from spiralpir.optimizer.measure.calibrate import report_layout

    p = _params(nu_1=9, nu_2=8)
    rep = {"implicit_db": True, "preprocessed_db_bytes": params_db_bytes(p),
           "peak_memory_bytes": 3 * 2**30, "implicit_layout": {"instances": 1, "folding": 32}}
    assert report_layout(p, rep) == (True, True, 32)
    assert report_layout(p, {**rep, "implicit_layout": {"instances": 1, "folding": 256}}) == (
        True, False, 256)
    assert report_layout(p, {k: v for k, v in rep.items() if k != "implicit_layout"}) == (
        True, False, 0)
    assert report_layout(p, {**rep, "implicit_db": False}) == (False, False, 0)


def test_first_dimension_fit_takes_its_compute_from_the_repeats() -> None:
    """calibrate._fit_first_dim: runs bound by the read bandwidth say nothing about the
    kernel's compute (the old fit read it as compute and charged every word at memory speed);
    a run whose words mostly repeat from cache and one compute-bound run recover fd and fdout."""
    from spiralpir.optimizer.measure.calibrate import FirstDimRun, _fit_first_dim

    fd, fdout = 2.5e-11, 2e-9

    def run(words: float, outputs: float, f: float, memory: float) -> FirstDimRun:
        t = max(f * words * fd + outputs * fdout, memory) + (1 - f) * words * fd
        return FirstDimRun(words, outputs, f, memory, t)

    runs = [run(2.7e8, 2e6, 1.0, 0.0216),  # memory bound
            run(3.4e7, 5e5, 1.0, 0.0027),  # memory bound
            run(2.7e8, 2e6, 1 / 8, 0.0027),  # repeats from cache
            run(4.5e8, 2.4e6, 1.0, 0.0120)]  # compute bound
    assert runs[0].seconds == 0.0216 and runs[1].seconds == 0.0027
    got = _fit_first_dim(runs)
    assert got == pytest.approx((fd, fdout), rel=1e-6)


def test_a_query_larger_than_the_cache_is_read_beside_the_database() -> None:
    """The tiled query (4·2^nu_1·(n+1)·n·d·L bytes) is read from memory once when it does not
    fit the cache itself: at n = 4 with one folding index it outweighs the database."""
    p = _params(n=4, nu_1=8, nu_2=0, poly_len=1024)
    q = query_bytes(p.variant, p.poly_len, len(p.moduli), p.n, p.nu_1)
    assert q == 4 * 256 * 5 * 4 * 1024 * len(p.moduli) > params_db_bytes(p)
    doc = Profile.shipped().to_dict()
    doc.update(cache_bytes=q / 2, read_bytes_per_second=1e9, stage_scale={}, threads={})
    prof = Profile.from_dict(doc)
    secs = stage_seconds(p, prof)["first_dimension"]
    assert secs == pytest.approx((params_db_bytes(p) + q) / 1e9)
    # a query the cache holds costs nothing more
    small = Profile.from_dict({**doc, "cache_bytes": q * 1.01})
    assert stage_seconds(p, small)["first_dimension"] == pytest.approx(
        max(params_db_bytes(p) / 1e9, sum(first_dim_parts(
            stage_op_counts(p)["first_dimension"], p.poly_len, small))))


def test_a_query_larger_than_the_cache_is_written_out_by_the_conversion() -> None:
    """The conversion's tiling writes the query to memory when the cache cannot hold it: every
    line read for ownership and written back, two bytes of traffic per byte at the read
    bandwidth; a query the cache holds adds nothing to the conversion's op counts."""
    p = _params(n=4, nu_1=8, nu_2=0, poly_len=1024)
    q = query_bytes(p.variant, p.poly_len, len(p.moduli), p.n, p.nu_1)
    doc = Profile.shipped().to_dict()
    doc.update(cache_bytes=q / 2, read_bytes_per_second=1e9, stage_scale={}, threads={})
    big = stage_seconds(p, Profile.from_dict(doc))["conversion"]
    held = stage_seconds(p, Profile.from_dict({**doc, "cache_bytes": q * 1.01}))["conversion"]
    prof = Profile.from_dict(doc)
    counts = stage_op_counts(p)["conversion"]
    ops = sum(c * prof.op_cost(op, p.poly_len) for op, c in counts.items())
    assert held == pytest.approx(ops)
    assert big - held == pytest.approx(2 * q / 1e9)
