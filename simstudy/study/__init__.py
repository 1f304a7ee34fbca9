"""Studies with people: simulated, planned and run live (:mod:`simstudy.study.live`)."""

__all__: list[str] = []
