"""Running scenarios: work units and their executors' results, run tables, summaries, sweeps,
the scenario document and the data dictionary."""
