"""Everything "study": the scenario's ``study:`` section, study tables from a scenario's people,
simulated rating studies of the published design, policy contrasts and power."""
