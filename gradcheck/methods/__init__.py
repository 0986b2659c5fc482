"""methods: the full-Jacobian and the fast (projections) ways of reaching a verdict."""
