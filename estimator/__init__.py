"""spiralpir estimator: lattice security of LWE / ring-LWE parameter sets, in pure Python."""
