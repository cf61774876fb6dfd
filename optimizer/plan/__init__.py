"""Planning: the search space, one vectorised evaluator for every variant, lower bounds, the
Z3 search, the exhaustive oracle, and the planner that turns a database shape into a Plan."""
