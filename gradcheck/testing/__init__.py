"""testing: the pytest plugin, Hypothesis strategies, the command line and op builds."""
