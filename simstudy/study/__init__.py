"""Everything "study": the scenario's ``study:`` section, study tables from a scenario's people,
simulated rating studies of the published design, policy contrasts and power, and studies run
live with real participants (:mod:`simstudy.live`)."""

__all__: list[str] = []
