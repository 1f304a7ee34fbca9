"""The discrete-event world: recourse over time (arrivals, sessions, acting, re-applying,
retraining), scheduled with simpy and computed in batches.

The ``simulation:`` entry (:mod:`simstudy.sim.spec`) validates without torch; the world itself
loads when first used.
"""

from ..core.lazy import lazy_exports

_EXPORTS = {
    "SIM_FILES": "experiment",
    "run_event_world": "experiment",
    "applicant_outcomes": "outcomes",
    "replication_metrics": "outcomes",
    "summarize": "outcomes",
    "timeline": "outcomes",
    "SimulationSpec": "spec",
    "EVENT_TYPES": "world",
    "TERMINAL_EVENTS": "world",
    "EventWorld": "world",
    "SimulationResult": "world",
    "fitted": "world",
    "simulate": "world",
}
__all__ = list(_EXPORTS)
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
