"""simstudy: simulation and user studies of personalized algorithmic recourse.

The front door names what a library user needs; each name's module loads when first used, so
``import simstudy`` stays light (no torch):

* :func:`run_scenario` runs a scenario document into a results directory;
  :func:`load_scenario` validates one without running it;
* :class:`People` are the simulated applicants of one replication x condition;
* :func:`fit_gamm` fits acceptance or willingness to act against a distance;
  :func:`audit` audits a finished run for group gaps;
* :func:`register` makes a kind of your own (a policy, a world, a response model) available
  to scenario documents.

Example:
    >>> import simstudy
    >>> simstudy.load_scenario.__module__, simstudy.People.__module__
    ('simstudy.run.scenario', 'simstudy.people.people')
"""

from .core import __version__
from .core.lazy import lazy_exports

_EXPORTS = {
    "run_scenario": "run.runner",
    "load_scenario": "run.scenario",
    "People": "people.people",
    "fit_gamm": "analysis.gamm",
    "audit": "analysis.audit",
    "register": "core.registry",
}
__all__ = ["__version__", *_EXPORTS]
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
