"""The attacks, one module per family; each maps ``(LWEParameters, CostModel)`` to an
``AttackCost`` minimised over its own parameters (β, d, ζ, …).

* ``primal`` — uSVP and BDD, and the BKZ + final-step engine the primal hybrids reuse;
* ``hybrid`` — the primal hybrids (guessing + BDD, with and without meet-in-the-middle);
* ``dual`` — the dual attack and the MATZOV dual hybrid.

The driver that runs them by name is ``spiralpir.estimator.estimate``.
"""
