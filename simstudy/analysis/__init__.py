"""simstudy.analysis."""
