"""A small live study shared by the live-study tests (prepared once per test process)."""

from __future__ import annotations

import functools
import tempfile
from pathlib import Path

import yaml

from simstudy.resources import resource_path

STUDY = resource_path("studies", "personalization.yaml")
GERMAN = resource_path("studies", "german_credit.yaml")


def small_study_file(folder: Path, **live: object) -> Path:
    """The shipped studies/personalization.yaml on a smaller world (seconds to prepare)."""
    doc = yaml.safe_load(STUDY.read_text())
    doc["world"]["n_samples"] = 3000
    doc["applicants"]["max_applicants"] = 150
    hare = next(p for p in doc["policies"] if p["kind"] == "hare")
    hare.update({"budget": 4, "iterations": 2, "steps": 20})
    doc["study"]["live"].update(live)
    path = Path(folder) / "study.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


def small_german_file(folder: Path, **live: object) -> Path:
    """The shipped studies/german_credit.yaml with a briefly trained flow and model."""
    doc = yaml.safe_load(GERMAN.read_text())
    doc["world"]["flow"] = {"epochs": 5, "hidden": [16], "spline_bins": 4}
    doc["decision_model"] = {"epochs": 40}
    doc["study"]["live"].update(live)
    path = Path(folder) / "german.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


@functools.cache
def prepared_german():
    """The prepared engine of the small German-credit study (its models in a private cache)."""
    import torch

    from simstudy.live.engine import LiveEngine
    from simstudy.world.decision import ModelCache

    torch.set_num_threads(1)
    folder = Path(tempfile.mkdtemp(prefix="simstudy-german-"))
    path = small_german_file(folder, target_per_condition=2)
    return LiveEngine(path, cache=ModelCache(folder / "cache")).prepare()


@functools.cache
def prepared_engine():
    """The prepared engine of the small study (its models in a private cache)."""
    import torch

    from simstudy.live.engine import LiveEngine
    from simstudy.world.decision import ModelCache

    torch.set_num_threads(1)
    folder = Path(tempfile.mkdtemp(prefix="simstudy-live-"))
    path = small_study_file(folder, target_per_condition=2)
    return LiveEngine(path, cache=ModelCache(folder / "cache")).prepare()


def page_token(page) -> str | None:
    """The page token of the form a browser shows (waiting out a navigation still under way)."""
    import time

    from playwright.sync_api import Error

    for _ in range(50):
        try:
            page.wait_for_load_state()
            field = page.query_selector("input[name='page']")
            return field.get_attribute("value") if field else None
        except Error:
            time.sleep(0.1)
    raise AssertionError("the page never settled")
