"""simstudy.policies."""
