"""The progress helper: plain log lines off a terminal, one global quiet switch."""

from __future__ import annotations

import pytest

from simstudy.cli.main import build_parser
from simstudy.core.progress import progress, set_quiet, track


@pytest.fixture(autouse=True)
def _loud():
    set_quiet(False)
    yield
    set_quiet(False)


def test_log_lines_when_stderr_is_not_a_terminal(capsys):
    for _ in track(range(100), desc="work", unit="step"):
        pass
    lines = capsys.readouterr().err.splitlines()
    assert lines[0].startswith("work: 0/100 step started")
    assert lines[-1].startswith("work: 100/100 step finished")
    # one line per tenth at most, never one per step
    assert len(lines) <= 12
    assert all("\r" not in line for line in lines)


def test_quiet_silences_everything(capsys):
    set_quiet(True)
    with progress(10, desc="work", unit="step") as bar:
        bar.update(10)
    list(track(range(5), desc="more", unit="step"))
    assert capsys.readouterr().err == ""


def test_disabled_display_counts_but_prints_nothing(capsys):
    bar = progress(3, desc="work", unit="step", enabled=False)
    bar.update(2)
    bar.close()
    assert bar.done == 2 and capsys.readouterr().err == ""


@pytest.mark.parametrize("argv", [["--quiet", "validate", "x.yaml"],
                                  ["validate", "x.yaml", "--quiet"]])
def test_quiet_is_one_global_flag(argv):
    assert build_parser().parse_args(argv).quiet is True
    assert build_parser().parse_args(["validate", "x.yaml"]).quiet is False
