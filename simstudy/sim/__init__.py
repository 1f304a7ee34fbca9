"""simstudy.sim."""
