"""Planning a study: the power of the design the study file runs (within-participant for a
simulated study, one condition per participant for a live one) and its preregistration's
figures."""

__all__: list[str] = []
