"""simstudy: simulation and user studies of personalized algorithmic recourse."""

__version__ = "0.1.0"

__all__ = ["__version__"]
