"""The ground floor: keyed randomness, the registry of kinds, documents, files and the results
store, executors, progress, plotting, intervals and the trainer skeleton.

Small modules imported by every other package; nothing here imports from above.
"""

#: The package's version, written into every run's manifest.
__version__ = "0.1.0"
