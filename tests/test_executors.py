"""Executors: the same bytes from this process, a local pool and Ray; the cache trains once."""

import os
import threading
import time

import pytest

from simstudy.executors import ProcessExecutor, SerialExecutor, make_executor
from simstudy.runner import run_scenario
from simstudy.world.decision import ModelCache

SCENARIO = """
name: executor-test
seed: 5
replications: 2
world: {kind: loan, n_samples: 800}
decision_model: {epochs: 8}
applicants: {max_applicants: 25}
policies:
  - {kind: oracle, n_values: 5}
  - {kind: oracle, name: oracle-np, n_values: 5, plausibility: false}
conditions:
  - name: k2
    population:
      actionability: {kind: ranking, n_actionable: 2}
      groups: {rule: income}
simulation:
  horizon_days: 20
  window_days: 2
  arrivals: {kind: poisson, rate_per_day: 4}
  group_column: privileged
"""


def _square(x):
    return x * x


def _pid_once_a_helper_ran(task):
    # A helper announces itself; the calling process waits for that, so both must compute.
    parent, flag = task
    if os.getpid() != parent:
        flag.touch()
    else:
        deadline = time.monotonic() + 300
        while not flag.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
    return os.getpid()


@pytest.fixture(scope="module")
def scenario_file(tmp_path_factory):
    p = tmp_path_factory.mktemp("sc") / "s.yaml"
    p.write_text(SCENARIO)
    return p


@pytest.fixture(scope="module")
def serial_run(scenario_file, tmp_path_factory):
    out = tmp_path_factory.mktemp("serial") / "run"
    cache = ModelCache(tmp_path_factory.mktemp("cache"))
    run_scenario(scenario_file, out, progress=False, cache=cache)
    return out, cache


OUTPUTS = ("summary.csv", "recourse.parquet", "sim_summary.csv", "timeline.csv",
           "events.parquet")


def _same_outputs(a, b):
    for name in OUTPUTS:
        assert (a / name).read_bytes() == (b / name).read_bytes(), name


def test_a_process_pool_writes_the_same_bytes(scenario_file, serial_run, tmp_path):
    serial, cache = serial_run
    assert isinstance(make_executor("local", 1), SerialExecutor)
    with make_executor("local", 2) as ex:
        assert isinstance(ex, ProcessExecutor)
        assert dict(ex.map_unordered(_square, [3, 1, 2])) == {0: 9, 1: 1, 2: 4}
        run_scenario(scenario_file, tmp_path / "pool", progress=False, cache=cache, executor=ex)
    _same_outputs(serial, tmp_path / "pool")


def test_the_calling_process_computes_beside_its_helpers(tmp_path):
    tasks = [(os.getpid(), tmp_path / "helper-ran")] * 2
    with ProcessExecutor(2) as ex:
        done = dict(ex.map_unordered(_pid_once_a_helper_ran, tasks))
    assert sorted(done) == [0, 1]
    assert os.getpid() in done.values() and len(set(done.values())) == 2


def test_resumed_run_recomputes_only_missing_units(scenario_file, serial_run, tmp_path):
    serial, cache = serial_run
    out = tmp_path / "run"
    run_scenario(scenario_file, out, progress=False, cache=cache)
    markers = sorted((out / "parts").rglob("*.json"))
    assert len(markers) == 2 * 2 * 2  # replications x policies x (recourse, event world)
    for m in markers[:3]:
        m.unlink()
    (out / "summary.csv").unlink()
    run_scenario(scenario_file, out, progress=False, cache=cache)
    _same_outputs(serial, out)


def test_cache_entry_lock_serialises_concurrent_trainers(tmp_path):
    cache = ModelCache(tmp_path)
    order = []

    def hold(name, pause):
        with cache.exclusive("decision-x"):
            order.append(f"{name}-in")
            time.sleep(pause)
            order.append(f"{name}-out")

    first = threading.Thread(target=hold, args=("a", 0.3))
    first.start()
    time.sleep(0.05)
    second = threading.Thread(target=hold, args=("b", 0))
    second.start()
    first.join()
    second.join()
    assert order == ["a-in", "a-out", "b-in", "b-out"]


def test_ray_writes_the_same_bytes_for_a_scenario_and_a_sweep(scenario_file, serial_run,
                                                              tmp_path):
    pytest.importorskip("ray")
    from _sweep_support import write_sweep

    from simstudy.executors import RayExecutor
    from simstudy.sweep import run_sweep

    serial, cache = serial_run
    sweep_file = write_sweep(tmp_path / "sweep")
    run_sweep(sweep_file, tmp_path / "sweep-local", progress=False, cache=cache)
    with RayExecutor(num_cpus=2) as ex:
        assert ex.workers == 2
        run_scenario(scenario_file, tmp_path / "ray", progress=False, cache=cache, executor=ex)
        run_sweep(sweep_file, tmp_path / "sweep-ray", progress=False, cache=cache, executor=ex)
    _same_outputs(serial, tmp_path / "ray")
    assert ((tmp_path / "sweep-local" / "summary.csv").read_bytes()
            == (tmp_path / "sweep-ray" / "summary.csv").read_bytes())
