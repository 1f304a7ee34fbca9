"""The preregistered exclusions of a live export, applied by analyze and by power alike."""

import pandas as pd
import pytest

from simstudy.study.exclusions import apply_exclusions, exclusion_rule
from simstudy.study.live_section import EXCLUSION_REASONS


def _export():
    rows = []
    people = [  # uid, status, condition, assigned, no_plan, pilot
        (0, "completed", "a", "a", 0, 0), (1, "failed_attention", "a", "a", 0, 0),
        (2, "timed_out", "b", "b", 0, 0), (3, "completed", "b", "b", 1, 0),
        (4, "completed", "b", "a", 1, 0), (5, "completed", "a", "a", 0, 1),
        (6, "returned", "a", "a", 0, 0), (7, "completed", "b", "b", 0, 0)]
    for uid, status, cond, assigned, no_plan, pilot in people:
        for item in range(2):
            rows.append({"uid": uid, "item": item, "act": 4, "condition": cond,
                         "assigned_condition": assigned, "status": status,
                         "no_plan": no_plan, "pilot": pilot})
    return pd.DataFrame(rows)


def test_each_reason_excludes_its_participants_and_only_them():
    res = apply_exclusions(_export(), EXCLUSION_REASONS)
    assert dict(zip(res.excluded["uid"], res.excluded["reason"], strict=True)) == {
        1: "failed_attention", 2: "timed_out", 3: "no_plan", 5: "pilot", 6: "not_completed"}
    # served by the replacement condition: analysed in it
    assert sorted(res.kept["uid"].unique()) == [0, 4, 7]
    assert not res.notes
    assert "3 participant(s) analysed; 5 excluded" in res.summary()


def test_reasons_left_out_of_the_file_keep_those_participants():
    res = apply_exclusions(_export(), ["failed_attention"])
    assert set(res.excluded["reason"]) == {"failed_attention", "not_completed"}
    assert 2 in set(res.kept["uid"]) and 3 in set(res.kept["uid"])


def test_an_older_export_reads_missing_columns_as_neutral_with_one_note_each():
    old = _export().drop(columns=["no_plan", "pilot", "assigned_condition"])
    res = apply_exclusions(old, EXCLUSION_REASONS)
    assert len(res.notes) == 3 and all("no column" in n for n in res.notes)
    assert set(res.excluded["reason"]) == {"failed_attention", "timed_out", "not_completed"}


def test_a_simulated_table_without_live_columns_is_left_alone():
    table = pd.DataFrame({"uid": [0, 1], "act": [3, 4]})
    res = apply_exclusions(table, EXCLUSION_REASONS)
    assert len(res.kept) == 2 and res.excluded.empty and not res.notes


def test_unknown_reasons_are_refused():
    with pytest.raises(ValueError, match="unknown exclusion reason"):
        apply_exclusions(_export(), ["bored"])


def test_the_rule_in_words_names_every_reason_of_the_file():
    lines = exclusion_rule(["failed_attention", "no_plan"], "replace")
    assert lines[0].startswith("failed_attention") and "replace" in lines[1]
    assert lines[-1].startswith("not_completed")
