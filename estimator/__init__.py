"""spiralpir estimator: lattice security of LWE / ring-LWE parameter sets, in pure Python.

Reproduces the cost models of the public lattice-estimator (malb/lattice-estimator; its
outputs are the test reference) without Sage: BKZ cost models MATZOV (default) and ADPS16
core-SVP under the GSA, and the attacks ``usvp``, ``bdd``, ``bdd_hybrid``,
``bdd_mitm_hybrid``, ``dual``, ``dual_hybrid`` (MATZOV FFT dual hybrid).

API for the optimizer (all levels are log2 of the attack cost in ring operations):

``spiralpir.estimator.spiral.security_report(poly_len, modulus, noise_width, secret,
cost_model="matzov") -> dict``
    Full estimate of a SPIRAL ring: dimension ``poly_len``, modulus ``modulus`` (the exact
    product of the CRT primes), error a discrete Gaussian of WIDTH ``noise_width``
    (s = σ·√(2π); SPIRAL's 6.4 is σ ≈ 2.553), ``secret`` one of ``"gaussian"`` (same as the
    error), ``"ternary"``, ``"sparse-ternary:PLUS,MINUS"``, ``"uniform"``.  Returns
    ``{"security_bits", "cheapest_attack", "attacks": {name: {"log2_rop", "beta", "dim"}},
    "cost_model", "estimator"}`` — the ``spiralpir security --json`` shape.  Under 2 s.

``spiralpir.estimator.table.max_log2_modulus(poly_len, noise_width, secret, bits=128)``
    Largest log2 q keeping ≥ ``bits`` of security, from the cached table (microseconds on
    the grid; grid misses fall back to the full estimate).  Conservative.

``spiralpir.estimator.table.security_bits_fast(poly_len, log2_modulus, noise_width, secret)``
    Table lookup/interpolation of the level; never above the full estimate.

``spiralpir.estimator.gate.check_params_file(path, floor=128)``
    CI gate: raises ``SpiralpirError`` if a parameters file (plan document, parameters literal
    or ring file: ``paramsets.load``) is below ``floor`` bits; ``gate.check`` gives the record
    ``spiralpir security --json`` prints.

Lower level: ``lwe_parameters.LWEParameters``, ``distributions`` (units explicit),
``estimate.estimate(params, cost_model, deny=...)`` returning a per-attack ``Report``; the
attacks themselves, one module per family, in ``attacks/`` (primal, hybrid, dual).

This package is the bottom Python layer: it imports nothing from ``spiralpir.optimizer`` and
defines the project's error type, ``errors.SpiralpirError``, which the optimizer re-exports.
"""
