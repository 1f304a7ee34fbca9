"""Executors: the same bytes from this process, a local pool and Ray; the cache trains once."""

import os
import threading
import time

import pytest

from simstudy.core.executors import AffinityQueue, ProcessExecutor, SerialExecutor, make_executor
from simstudy.run.runner import run_scenario
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


def _caller_waits_for_release(task):
    parent, release = task
    if os.getpid() == parent:
        deadline = time.monotonic() + 120
        while not release.exists() and time.monotonic() < deadline:
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


def test_a_helpers_result_reaches_the_caller_while_the_caller_still_computes(tmp_path):
    # the driver stores what is finished at once: a kill then loses only unfinished units
    release = tmp_path / "release"
    tasks = [(os.getpid(), release)] * 2
    with ProcessExecutor(2) as ex:
        results = ex.map_unordered(_caller_waits_for_release, tasks)
        _, first = next(results)
        assert first != os.getpid() and not release.exists()
        release.touch()
        _, second = next(results)
    assert second == os.getpid()


def test_several_helpers_each_get_tasks_and_every_result_comes_back():
    with ProcessExecutor(3) as ex:
        assert dict(ex.map_unordered(_square, list(range(12)))) == {i: i * i for i in range(12)}


def test_affinity_queue_keeps_shared_work_on_one_worker_and_apart_from_others():
    # 3 replications x 2 policies of one run, submitted policy by policy
    keys = [("run", rep, pol) for pol in ("a", "b") for rep in range(3)]
    q = AffinityQueue(keys)
    first, second = q.take("w1"), q.take("w2")
    assert keys[first][1] != keys[second][1]  # two workers start on different replications
    q.done("w1")
    again = q.take("w1")
    assert keys[again][1] == keys[first][1]  # and continue the replication they prepared
    handed = [first, second, again]
    while (i := q.take("w1")) is not None:
        q.done("w1")
        handed.append(i)
    assert sorted(handed) == list(range(len(keys))) and len(q) == 0


def test_affinity_queue_never_doubles_a_key_in_preparation_while_another_is_left():
    keys = [("run", 0, "best")] * 3 + [("run", 0, "s0")] + [("run", 0, "s1")] * 2
    q = AffinityQueue(keys)
    taken = {w: q.take(w) for w in ("w1", "w2", "w3")}
    assert len({keys[i] for i in taken.values()}) == 3
    assert AffinityQueue([None, None, None]).take("w") == 0  # no keys: submission order


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

    from simstudy.core.executors import RayExecutor
    from simstudy.run.sweep_runner import run_sweep

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
