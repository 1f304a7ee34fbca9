"""Running scenarios: work units and their executors' results, run tables, summaries, sweeps,
the scenario document, the data dictionary and the power command's orchestration."""
