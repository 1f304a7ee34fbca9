"""The discrete-event world: recourse over time (arrivals, sessions, acting, re-applying,
retraining), scheduled with simpy and computed in batches."""

from .experiment import SIM_FILES, run_event_world
from .outcomes import applicant_outcomes, replication_metrics, summarize, timeline
from .spec import SimulationSpec
from .world import (
    EVENT_TYPES,
    TERMINAL_EVENTS,
    EventWorld,
    SimulationResult,
    fitted,
    simulate,
)

__all__ = [
    "SIM_FILES",
    "run_event_world",
    "applicant_outcomes",
    "replication_metrics",
    "summarize",
    "timeline",
    "SimulationSpec",
    "EVENT_TYPES",
    "TERMINAL_EVENTS",
    "EventWorld",
    "SimulationResult",
    "fitted",
    "simulate",
]
