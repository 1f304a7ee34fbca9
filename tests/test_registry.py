"""The table of kinds: every family holds its built-in kinds, found through the entry points;
each kind is a parameters model and a runtime; missing or stale entry points say in one line to
reinstall. Kinds of one's own (a plugin, a local module) are tested in ``test_plugin.py``."""

from __future__ import annotations

from typing import Literal

import pytest

from simstudy import register
from simstudy.core.documents import StrictModel
from simstudy.core.registry import entry_model, kinds, unregister
from simstudy.world.specs import WorldParams


def test_the_table_holds_every_family_of_kinds():
    # found through the entry points, with nothing imported first
    from simstudy.core.registry import FAMILIES, kinds

    assert all(kinds(family) for family in FAMILIES)
    assert {"oracle", "wachter", "growing_spheres", "hare", "icarma"} <= set(kinds("policy"))
    assert {"loan", "causal_flow", "chain_linear"} <= set(kinds("world"))
    assert {"logistic", "rating"} <= set(kinds("response"))
    assert kinds("family") == ["binomial", "gaussian", "ocat"]
    assert kinds("executor") == ["local", "ray"]
    assert kinds("model") == ["onnx", "sklearn", "torchscript"]


@pytest.mark.parametrize("family", ["policy", "world", "response", "family", "executor",
                                    "model"])
def test_every_built_in_kind_is_a_parameters_model_and_a_runtime(family):
    from simstudy.core.registry import KINDS, kinds, runtime_of

    for name in kinds(family):
        kind = KINDS[family][name]
        assert kind.runtime is not None, name
        runtime = runtime_of(family, name)
        assert callable(runtime)
        if family == "policy":
            params = kind.params.model_validate({"kind": name})
            assert runtime.Params is kind.params and type(params.build()) is runtime


def test_a_model_naming_several_kinds_is_registered_under_each():
    class TwinWorldParams(WorldParams):
        kind: Literal["twin_a", "twin_b"]

    register("world", TwinWorldParams, lambda params, seed, cache, base_dir: params.kind)
    try:
        assert entry_model("world", "twin_a") is entry_model("world", "twin_b") is TwinWorldParams
        assert TwinWorldParams(kind="twin_b").build(0) == "twin_b"
    finally:
        unregister("world", "twin_a")
        unregister("world", "twin_b")
    assert not {"twin_a", "twin_b"} & set(kinds("world"))


class _EntryPoint:
    """An installed entry point, as importlib.metadata gives it."""

    def __init__(self, name, value, dist, loaded=None):
        self.name, self.value, self.loaded = name, value, loaded
        self.dist = type("Dist", (), {"name": dist})()

    def load(self):
        if isinstance(self.loaded, Exception):
            raise self.loaded
        return self.loaded


def _installed(monkeypatch, entry_points):
    import importlib.metadata

    from simstudy.core import registry

    monkeypatch.setattr(importlib.metadata, "entry_points", lambda group: entry_points)
    monkeypatch.setattr(registry, "_discovered", False)


def test_missing_entry_points_say_in_one_line_to_reinstall(monkeypatch):
    from simstudy.core.registry import KindsNotInstalled, discover

    _installed(monkeypatch, [])
    with pytest.raises(KindsNotInstalled, match=r"^simstudy's kinds cannot be found: no entry "
                                                r"points .* reinstall .*pip install") as info:
        discover()
    assert "\n" not in str(info.value)


def test_stale_entry_points_are_named_and_say_to_reinstall(monkeypatch):
    from simstudy.core import registry

    if registry._source_tree() is None:
        pytest.skip("an installed package: no pyproject.toml to compare with")
    declared = registry.declared_entry_points(registry._source_tree())
    old = [_EntryPoint(n, v, "simstudy") for n, v in declared.items() if n != "worlds"]
    old.append(_EntryPoint("worlds", "simstudy.world.specs", "simstudy"))
    _installed(monkeypatch, old)
    with pytest.raises(registry.KindsNotInstalled, match="differ from .*pyproject.toml .*worlds "
                                                         "= simstudy.world.specs.*reinstall"):
        registry.discover()


def test_an_entry_point_may_name_kinds_and_a_broken_plugin_is_named(monkeypatch):
    from simstudy.core import registry

    class EchoParams(StrictModel):
        kind: Literal["echo"] = "echo"

    own = [_EntryPoint(n, v, "simstudy") for n, v in
           (registry.declared_entry_points(registry._source_tree()).items()
            if registry._source_tree() else [])]
    echo = registry.Kind("response", "echo", EchoParams, lambda params: "echo")
    _installed(monkeypatch, own + [_EntryPoint("echo", "echo_plugin:KINDS", "echo-plugin",
                                               [echo])])
    try:
        registry.discover()
        assert registry.build("response", EchoParams()) == "echo"
    finally:
        registry.KINDS["response"].pop("echo", None)
    _installed(monkeypatch, own + [_EntryPoint("broken", "broken_plugin", "broken-plugin",
                                               ModuleNotFoundError("No module named 'torchx'"))])
    with pytest.raises(registry.KindsNotInstalled, match="the kinds of broken-plugin cannot be "
                                                         "imported: entry point broken = "
                                                         "broken_plugin .*torchx"):
        registry.discover()
