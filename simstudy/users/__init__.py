"""simstudy.users."""
