"""A small sweep shared by the sweep and executor tests."""

from __future__ import annotations

from pathlib import Path

BASE = """
name: sweep-base
seed: 1
replications: 1
world: {kind: loan, n_samples: 800}
decision_model: {epochs: 8}
applicants: {max_applicants: 20}
policies:
  - {kind: oracle, n_values: 5}
conditions:
  - {name: k2, population: pop.yaml}
"""

POP = """
actionability: {kind: ranking, n_actionable: 2}
cost: {shape: linear}
groups: {rule: income}
"""

SWEEP = """
name: small-sweep
scenario: base.yaml
grid:
  conditions[0].population.cost.shape: [constant, convex]
variants:
  - {label: plain, set: {}}
  - label: no-plausibility
    set: {"policies[0].plausibility": false}
"""


def write_sweep(folder: Path) -> Path:
    """Writes the base scenario, its population and the sweep; returns the sweep's path."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "base.yaml").write_text(BASE)
    (folder / "pop.yaml").write_text(POP)
    (folder / "sweep.yaml").write_text(SWEEP)
    return folder / "sweep.yaml"
