"""Kinds of one's own, found the way the package's own are: a plugin distribution
(``tests/plugin``, ``simstudy-example-plugin``) installed with an entry point of the group
``simstudy.kinds``, and a local module a scenario names in ``imports:``. Each registers a
policy, a response model and a world; ``simstudy validate`` and ``simstudy run`` use all three
from a scenario file."""

from __future__ import annotations

import pickle
import shutil
import subprocess
import sys
from importlib.util import find_spec
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from simstudy.cli.main import main
from simstudy.core import registry
from simstudy.run.scenario import load_scenario

PLUGIN = Path(__file__).parent / "plugin"
OWN_KINDS = [("policy", "raise_income"), ("response", "everyone_acts"), ("world", "toy")]

SCENARIO = """
name: own-kinds
seed: 5
replications: 1
{imports}world: {{kind: toy, n_samples: 1500}}
decision_model: {{epochs: 20}}
applicants: {{max_applicants: 40}}
policies:
  - {{kind: raise_income, share: 0.8}}
  - {{kind: oracle, n_values: 9}}
conditions:
  - name: all
    population:
      actionability: {{kind: ranking, n_actionable: 2}}
      groups: {{rule: random, privileged_share: 0.5}}
response: {{kind: everyone_acts}}
simulation:
  horizon_days: 20
  arrivals: {{kind: poisson, rate_per_day: 3}}
  request_probability: 1.0
  action: {{base_days: 1, per_unit_cost_days: 0, capacity_sd: 0.0, partial_probability: 0.0}}
"""


def _forget(module: str, folder: Path) -> None:
    for family, name in OWN_KINDS:
        registry.KINDS[family].pop(name, None)
    sys.modules.pop(module, None)
    while str(folder) in sys.path:
        sys.path.remove(str(folder))


@pytest.fixture(scope="module")
def installed_plugin(tmp_path_factory):
    """The plugin installed (``pip install --target``) into a folder put on ``sys.path``, as
    an installation into the environment would: its entry point is read from its metadata."""
    work = tmp_path_factory.mktemp("plugin")
    shutil.copytree(PLUGIN, work / "source")  # the build leaves its files beside the source
    target = work / "site"
    # offline with the setuptools at hand; else pip fetches the build backend
    offline = ["--no-build-isolation", "--no-index"] if find_spec("setuptools") else []
    subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", *offline,
                    "--target", str(target), str(work / "source")],
                   check=True, capture_output=True, timeout=300)
    sys.path.insert(0, str(target))
    registry.discover(again=True)
    yield target
    _forget("simstudy_example_plugin", target)


def _validate_and_run(folder: Path, imports: str, capsys) -> Path:
    path = folder / "own.yaml"
    path.write_text(SCENARIO.format(imports=imports))
    assert main(["validate", str(path)]) == 0, capsys.readouterr().err
    assert main(["--quiet", "run", str(path), "--out", str(folder / "run"),
                 "--workers", "1"]) == 0, capsys.readouterr().err
    return folder / "run"


def _uses_all_three(run_dir: Path) -> None:
    recourse = pd.read_parquet(run_dir / "recourse.parquet")
    assert set(recourse["policy"]) == {"raise_income", "oracle"}
    # the policy: savings (the toy world's last actionable feature) raised for whoever may
    raised = recourse[(recourse["policy"] == "raise_income") & recourse["found"]]
    assert len(raised) > 0 and (raised["xcf_savings"] > raised["x_savings"]).all()
    # the world: its own equation moves savings when only skill is acted on (0.8 times
    # skill's change), and the immutable group is never acted on
    assert {"x_group", "x_skill", "x_savings"} <= set(recourse.columns)
    found = recourse[(recourse["policy"] == "oracle") & recourse["found"]]
    assert (found["xcf_group"] == found["x_group"]).all()
    skill_only = found[found["act_skill"] & ~found["act_savings"]]
    assert len(skill_only) > 0
    assert np.allclose(skill_only["xcf_savings"] - skill_only["x_savings"],
                       0.8 * (skill_only["xcf_skill"] - skill_only["x_skill"]), atol=1e-5)
    events = set(pd.read_parquet(run_dir / "events.parquet")["event"])
    # the response model: nobody declines or idles
    assert "recourse_given" in events and not {"declined", "no_action"} & events


def test_an_installed_plugin_s_kinds_validate_and_run(installed_plugin, tmp_path, capsys):
    assert {"raise_income", "toy", "everyone_acts"} <= {
        *registry.kinds("policy"), *registry.kinds("world"), *registry.kinds("response")}
    _uses_all_three(_validate_and_run(tmp_path, "", capsys))


@pytest.fixture
def without_own_kinds():
    # the plugin's kinds, when it is installed, are set aside
    saved = {family: dict(registry.KINDS[family]) for family, _ in OWN_KINDS}
    for family, name in OWN_KINDS:
        registry.KINDS[family].pop(name, None)
    yield
    for family in saved:
        registry.KINDS[family].update(saved[family])


@pytest.fixture
def local_module(tmp_path, without_own_kinds):
    # the plugin's module, saved beside the scenario as a module of one's own
    shutil.copy(PLUGIN / "simstudy_example_plugin" / "__init__.py", tmp_path / "my_kinds.py")
    yield tmp_path
    _forget("my_kinds", tmp_path)


def test_a_scenario_s_imports_make_a_local_module_s_kinds_known(local_module, capsys):
    _uses_all_three(_validate_and_run(local_module, "imports: [my_kinds]\n", capsys))
    assert registry.entry_model("policy", "raise_income").__module__ == "my_kinds"


def test_a_scenario_s_imports_reach_a_process_started_before_it_was_read(local_module):
    # a worker pool starts while the scenario is validated: the pickled scenario imports its
    # modules in the worker before its entries are read
    path = local_module / "own.yaml"
    path.write_text(SCENARIO.format(imports="imports: [my_kinds]\n"))
    scenario, _ = load_scenario(path)
    read = subprocess.run(
        [sys.executable, "-c", "import pickle, sys; s = pickle.loads(sys.stdin.buffer.read()); "
                               "print(type(s.policies[0]).__module__, s.policies[0].share)"],
        input=pickle.dumps(scenario), capture_output=True, cwd=local_module.parent, timeout=300)
    assert read.returncode == 0, read.stderr.decode()
    assert read.stdout.decode().split() == ["my_kinds", "0.8"]


def test_without_the_import_the_kinds_are_unknown_by_name(tmp_path, capsys,
                                                          without_own_kinds):
    path = tmp_path / "own.yaml"
    path.write_text(SCENARIO.format(imports=""))
    assert main(["validate", str(path)]) == 2
    assert "policies[0].kind: unknown policy 'raise_income'" in capsys.readouterr().err


def test_a_module_that_cannot_be_imported_is_one_line(tmp_path, capsys):
    path = tmp_path / "own.yaml"
    path.write_text(SCENARIO.format(imports="imports: [nowhere_to_be_found]\n"))
    (tmp_path / "broken.py").write_text("raise RuntimeError('no kinds today')\n")
    assert main(["validate", str(path)]) == 2
    assert capsys.readouterr().err.strip() == (
        f"{path}: imports[0]: no module 'nowhere_to_be_found' in {tmp_path} or the working "
        "directory")
    path.write_text(SCENARIO.format(imports="imports: [broken]\n"))
    try:
        assert main(["validate", str(path)]) == 2
    finally:
        _forget("broken", tmp_path)
    assert capsys.readouterr().err.strip() == (
        f"{path}: imports[0]: importing 'broken' failed: RuntimeError: no kinds today")
