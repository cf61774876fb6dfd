"""Models of a parameter set: noise (correctness), cost (server seconds from a machine
profile) and security (the bridge to spiralpir.estimator)."""
