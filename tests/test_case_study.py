"""The fairness case study's four findings, checked on audits of planted synthetic runs."""

from __future__ import annotations

import pytest
import torch
from test_audit import synthetic_recourse
from test_report import CASE

from simstudy.analysis.audit import audit
from simstudy.analysis.case_study import case_study_findings, has_case_study
from simstudy.analysis.groups import Codebook
from simstudy.world.loan_roles import LOAN_ROLES

torch.set_num_threads(1)

#: what a case-study run's manifest gives the audit: the Loan world's codes and the race labels
#: its populations declare
CODEBOOK = Codebook({**LOAN_ROLES.codebook, "race": {0: "white", 1: "non-white"}},
                    LOAN_ROLES.reference_levels)


@pytest.fixture(scope="module")
def case_result():
    """A synthetic run with the case study's four effects planted."""
    df = synthetic_recourse(5, n=400, conditions=CASE)
    return audit(df, ["gender", "race"], baseline="baseline", n_bootstrap=200,
                 n_permutations=200, codebook=CODEBOOK)


def test_the_case_study_is_recognised_by_its_conditions_and_groupings(case_result):
    assert has_case_study(case_result, {k: k for k in CASE})
    assert not has_case_study(case_result, {**{k: k for k in CASE}, "race": "missing"})


def test_case_study_findings_reproduce_when_planted(case_result):
    found = case_study_findings(case_result, "oracle")
    assert [f.reproduced for f in found] == [True, True, True, True]
    assert "non-white" in found[2].text and "female non-white" in found[3].text


def test_case_study_findings_fail_without_effects():
    df = synthetic_recourse(6, n=200, conditions={k: {} for k in CASE})
    res = audit(df, ["gender", "race"], baseline="baseline", n_bootstrap=100,
                n_permutations=100, codebook=CODEBOOK)
    found = case_study_findings(res, "oracle")
    assert not any(f.reproduced for f in found)
    assert all("not reproduced" in f.text.lower() for f in found)


def test_a_gap_of_the_opposite_sign_is_not_reproduced():
    """A race gap present only under race-correlated profiles, but with non-white applicants
    *cheaper* and more plausible, is a hidden disparity, not the paper's finding."""
    flipped = {**CASE, "race": {"female": 0.3, "nonwhite": -0.5}}
    df = synthetic_recourse(5, n=400, conditions=flipped)
    res = audit(df, ["gender", "race"], baseline="baseline", n_bootstrap=200,
                n_permutations=200, codebook=CODEBOOK)
    hidden = res.hidden
    assert ((hidden["comparison"] == "race: non-white - white") & (hidden["condition"] == "race")
            & (hidden["metric"] == "cost_unweighted")).any()
    finding = case_study_findings(res, "oracle")[2]
    assert finding.reproduced is False
    assert "non-white cheaper" in finding.text and "not reproduced" in finding.text.lower()
