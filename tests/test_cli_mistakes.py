"""A newcomer's mistakes on the journey pilot -> calibrate -> power -> preregister -> serve ->
bots -> export -> analyze -> audit: each is refused (or warned) in one line that names the file
or argument and says how to fix it, with exit code 2 and no traceback.

The cases run the command line in this process; every refusal comes before any fit, server or
bot starts. The few that need a real process (an abort of the interpreter, a signal) run one.
"""

from __future__ import annotations

import json
import os
import socket
import sqlite3
import subprocess
import sys
import threading
import zipfile
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml
from _live_support import small_study_file

from simstudy.cli import main
from simstudy.core.store import file_sha256

LABELS = ["Strongly disagree", "Disagree", "Somewhat disagree", "Neither",
          "Somewhat agree", "Agree", "Strongly agree"]


def _pilot(participants: int = 30, items: int = 5) -> pd.DataFrame:
    rng = np.random.default_rng(0)
    n = participants * items
    return pd.DataFrame({
        "uid": np.repeat(np.arange(participants), items), "item": np.tile(np.arange(items),
                                                                          participants),
        "sparsity": rng.integers(1, 5, n), "proximity": rng.uniform(0.05, 1.5, n).round(3),
        "accept": rng.integers(1, 8, n), "act": rng.integers(1, 8, n),
        "gender": rng.choice(["female", "male"], n)})


def _changed(frame: pd.DataFrame, **columns) -> pd.DataFrame:
    frame = frame.copy()
    for column, change in columns.items():
        frame[column] = change(frame[column])
    return frame


class _Healthz(BaseHTTPRequestHandler):
    body: bytes = b""
    status: int = 200

    def do_GET(self):  # noqa: N802 - http.server's name
        self.send_response(self.status)
        self.send_header("Content-Type", "application/json")
        self.end_headers()
        self.wfile.write(self.body)

    def log_message(self, *args):
        pass


def _server(status: int, body: bytes) -> ThreadingHTTPServer:
    handler = type("H", (_Healthz,), {"status": status, "body": body})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    """Every file the cases use, written once: the pilot and its broken variants, documents,
    databases, a workbook; a busy port, a free one, and two servers that are not this study's."""
    tmp = tmp_path_factory.mktemp("mistakes")
    f: dict[str, str] = {"tmp": str(tmp)}
    pilot = _pilot()

    def table(name: str, frame: pd.DataFrame) -> None:
        frame.to_csv(tmp / f"{name}.csv", index=False)
        f[name] = str(tmp / f"{name}.csv")

    table("pilot", pilot)
    table("scale15", _changed(pilot, accept=lambda c: c.clip(upper=5),
                              act=lambda c: c.clip(upper=5)))
    table("scale10", _changed(pilot, act=lambda c: c + 3))
    table("sparsity0", _changed(pilot, sparsity=lambda c: c - 1))
    table("sparsity_frac", _changed(pilot, sparsity=lambda c: c + 0.5))
    table("duplicated", pd.concat([pilot, pilot.head(8)]))
    table("blanks", _changed(pilot, act=lambda c: c.where(c.index % 17 != 3)))
    table("missing_code", _changed(pilot, act=lambda c: c.where(c.index != 4, -99)))
    table("text", _changed(pilot, accept=lambda c: c.map(lambda v: LABELS[v - 1]),
                           act=lambda c: c.map(lambda v: LABELS[v - 1])))
    table("no_ratings", pilot.rename(columns={"accept": "Q12_1", "act": "Q13_1"}))
    table("no_uid", _changed(pilot, uid=lambda c: c.where(c.index != 7)))
    lines = (tmp / "pilot.csv").read_text().splitlines()
    questions = "Participant,Item,Sparsity,Proximity,How acceptable?,Would you act?,Gender"
    imports = ",".join(f'"{{""ImportId"":""QID{i}""}}"' for i in range(7))
    for name, extra in (("qualtrics", [questions, imports]), ("qualtrics_legacy", [questions])):
        (tmp / f"{name}.csv").write_text("\n".join([lines[0], *extra, *lines[1:]]) + "\n")
        f[name] = str(tmp / f"{name}.csv")
    with zipfile.ZipFile(tmp / "pilot.xlsx", "w") as z:  # an Office Open XML workbook
        z.writestr("[Content_Types].xml", "<Types/>")
        z.writestr("xl/workbook.xml", "<workbook/>")
    f["xlsx"] = str(tmp / "pilot.xlsx")
    (tmp / "empty.csv").write_bytes(b"")
    f["empty"] = str(tmp / "empty.csv")

    def doc(name: str, content: dict) -> None:
        (tmp / f"{name}.yaml").write_text(yaml.safe_dump(content))
        f[name] = str(tmp / f"{name}.yaml")

    model = {"models": [{"response": "act", "distance": "sparsity"}], "ordinal": False,
             "plot": False}
    doc("spec", model)
    doc("spec_qualtrics", {**model, "qualtrics": True})
    doc("spec_levels_short", {**model, "levels": {k: i + 1 for i, k in enumerate(LABELS)
                                                  if k != "Neither"}})
    doc("spec_scale15", {**model, "scale": [1, 5]})
    doc("spec_columns", {**model, "columns": {"act": "Q99"}})
    doc("spec_typo", {**model, "models": [{"response": "acts", "distance": "sparsity"}]})
    study = small_study_file(tmp)
    f["study"] = str(study)
    other = tmp / "other_study.yaml"
    other.write_text(study.read_text() + "\n# another version\n")
    f["other_study"] = str(other)
    # databases: a study's (empty), a foreign one, a damaged one
    from simstudy.live.database import Store

    Store(tmp / "study.sqlite").read("SELECT 1")
    f["db"] = str(tmp / "study.sqlite")
    with sqlite3.connect(tmp / "foreign.sqlite") as db:
        db.execute("CREATE TABLE orders (id INTEGER)")
    f["foreign_db"] = str(tmp / "foreign.sqlite")
    (tmp / "damaged.sqlite").write_bytes(b"SQLite format 3\x00" + b"\x07" * 200)
    f["damaged_db"] = str(tmp / "damaged.sqlite")
    (tmp / "folder").mkdir()
    f["folder"] = str(tmp / "folder")
    busy = socket.socket()
    busy.bind(("127.0.0.1", 0))
    busy.listen(1)
    f["busy_port"] = str(busy.getsockname()[1])
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        f["free_port"] = str(s.getsockname()[1])
    another = _server(200, json.dumps({"status": "ready",
                                       "study_sha256": file_sha256(other)}).encode())
    foreign = _server(404, b"not found")
    f["another_url"] = f"http://127.0.0.1:{another.server_address[1]}"
    f["foreign_url"] = f"http://127.0.0.1:{foreign.server_address[1]}"
    yield f
    busy.close()
    another.shutdown()
    foreign.shutdown()


# (case, argv with {placeholders} from the files fixture, text each message must hold: the
# file or argument named, then the fix)
CASES = [
    # serve: ports, the database, the study file
    ("serve-port-out-of-range", "serve {study} --db {tmp}/a.sqlite --port 80000",
     ["--port 80000", "outside 1..65535", "such as 8000"]),
    ("serve-port-zero", "serve {study} --db {tmp}/a.sqlite --port 0", ["--port 0", "8000"]),
    ("serve-port-negative", "serve {study} --db {tmp}/a.sqlite --port -5", ["--port -5", "8000"]),
    ("serve-port-busy", "serve {study} --db {tmp}/a.sqlite --port {busy_port}",
     ["--port {busy_port}", "already in use", "choose another port"]),
    ("serve-host-not-this-machine", "serve {study} --db {tmp}/a.sqlite --host 192.0.2.1 --port "
     "{free_port}", ["--host 192.0.2.1", "127.0.0.1"]),
    ("serve-db-is-a-csv", "serve {study} --db {pilot}", ["--db", "a CSV table", "new file name"]),
    ("serve-db-is-a-folder", "serve {study} --db {folder}", ["--db", "folder", "study.sqlite"]),
    ("serve-db-foreign-sqlite", "serve {study} --db {foreign_db}",
     ["--db", "without a study's tables", "simstudy serve --db"]),
    ("serve-db-damaged", "serve {study} --db {damaged_db}", ["--db", "damaged", "copy"]),
    ("serve-study-is-a-csv", "serve {pilot} --db {tmp}/a.sqlite",
     ["STUDY", "a CSV table", "simstudy analyze"]),
    ("serve-study-is-a-workbook", "serve {xlsx} --db {tmp}/a.sqlite",
     ["STUDY", "Excel", "simstudy analyze"]),
    ("serve-study-missing", "serve {tmp}/nowhere.yaml --db {tmp}/a.sqlite",
     ["nowhere.yaml", "no such file"]),
    ("serve-compute-workers-negative", "serve {study} --db {tmp}/a.sqlite --compute-workers -1",
     ["--compute-workers -1", "at least 0"]),
    ("serve-prereg-missing", "serve {study} --db {tmp}/a.sqlite --prereg {tmp}/prereg.md",
     ["--prereg", "cannot read"]),
    # bots: the URL, the server behind it, the numbers
    ("bots-url-without-scheme", "bots {study} --url 127.0.0.1:8731",
     ["--url 127.0.0.1:8731", "http://127.0.0.1:8731"]),
    ("bots-url-host-without-scheme", "bots {study} --url localhost:8000",
     ["--url localhost:8000", "http://localhost:8000"]),
    ("bots-url-other-scheme", "bots {study} --url ftp://127.0.0.1:8000",
     ["--url ftp://", "http://HOST:PORT"]),
    ("bots-url-without-host", "bots {study} --url http://", ["--url http://", "127.0.0.1"]),
    ("bots-url-port-out-of-range", "bots {study} --url http://127.0.0.1:99999",
     ["--url", "1..65535"]),
    ("bots-nothing-answers", "bots {study} --url http://127.0.0.1:{free_port} --wait 0",
     ["--url", "nothing answers", "simstudy serve"]),
    ("bots-another-study", "bots {study} --url {another_url} --wait 0",
     ["study.yaml", "another study file", "the file the server serves"]),
    ("bots-not-a-study-server", "bots {study} --url {foreign_url} --wait 0",
     ["--url", "not a simstudy study server", "simstudy serve printed"]),
    ("bots-participants-zero", "bots {study} --url http://x:1 --participants 0",
     ["--participants 0", "at least 1"]),
    ("bots-concurrency-zero", "bots {study} --url http://x:1 --concurrency 0",
     ["--concurrency 0", "at least 1"]),
    ("bots-think-text", "bots {study} --url http://x:1 --think slow", ["--think slow", "1,5"]),
    ("bots-think-reversed", "bots {study} --url http://x:1 --think 5,1", ["--think 5,1", "1,5"]),
    ("bots-wait-negative", "bots {study} --url http://x:1 --wait -1", ["--wait -1", "at least 0"]),
    ("bots-start-negative", "bots {study} --url http://x:1 --start -1",
     ["--start -1", "at least 0"]),
    ("bots-study-is-a-csv", "bots {pilot} --url http://x:1", ["STUDY", "a CSV table"]),
    # export: the database by content, --out
    ("export-a-csv", "export {pilot} --out {tmp}/e1.csv",
     ["DB", "pilot.csv", "not a study database", "simstudy analyze"]),
    ("export-a-workbook", "export {xlsx} --out {tmp}/e1.csv", ["DB", "Excel", "serve --db"]),
    ("export-an-empty-file", "export {empty} --out {tmp}/e1.csv", ["empty", "serve --db"]),
    ("export-a-foreign-sqlite", "export {foreign_db} --out {tmp}/e1.csv",
     ["foreign.sqlite", "orders", "simstudy serve --db wrote"]),
    ("export-a-damaged-sqlite", "export {damaged_db} --out {tmp}/e1.csv",
     ["damaged.sqlite", "restore it"]),
    ("export-a-yaml", "export {study} --out {tmp}/e1.csv", ["study.yaml", "YAML", "serve --db"]),
    ("export-missing", "export {tmp}/nowhere.sqlite --out {tmp}/e1.csv",
     ["nowhere.sqlite", "no such file"]),
    ("export-a-folder", "export {folder} --out {tmp}/e1.csv", ["folder", "a file inside it"]),
    ("export-out-is-a-folder", "export {db} --out {folder}", ["--out", "directory",
                                                              "file name"]),
    ("export-out-below-a-file", "export {db} --out {pilot}/study.csv",
     ["--out", "not a directory"]),
    # calibrate: the pilot's file and its table against the 7-point study
    ("calibrate-a-workbook", "calibrate {xlsx} --out {tmp}/c/r.yaml",
     ["pilot.xlsx", "Excel", "save the sheet as CSV"]),
    ("calibrate-a-yaml", "calibrate {spec} --out {tmp}/c/r.yaml", ["spec.yaml", "SPEC"]),
    ("calibrate-an-empty-file", "calibrate {empty} --out {tmp}/c/r.yaml",
     ["empty.csv", "is empty", "rating table"]),
    ("calibrate-the-database", "calibrate {db} --out {tmp}/c/r.yaml",
     ["study.sqlite", "simstudy export"]),
    ("calibrate-1-5-scale", "calibrate {scale15} --out {tmp}/c/r.yaml",
     ["scale15.csv", "no rating above 5", "scale: [1, 5]", "--spec"]),
    ("calibrate-1-5-scale-stated", "calibrate {scale15} --spec {spec_scale15} --out "
     "{tmp}/c/r.yaml", ["spec_scale15.yaml", "scale", "7-point"]),
    ("calibrate-0-10-scale", "calibrate {scale10} --out {tmp}/c/r.yaml",
     ["scale10.csv", "act", "outside the rating scale", "scale: ["]),
    ("calibrate-sparsity-0", "calibrate {sparsity0} --out {tmp}/c/r.yaml",
     ["sparsity0.csv", "sparsity", "below 1", "add 1"]),
    ("calibrate-sparsity-not-whole", "calibrate {sparsity_frac} --out {tmp}/c/r.yaml",
     ["sparsity_frac.csv", "not whole", "proximity"]),
    ("calibrate-duplicated-rows", "calibrate {duplicated} --out {tmp}/c/r.yaml",
     ["duplicated.csv", "uid, item", "keep one row per participant and item"]),
    ("calibrate-qualtrics-export", "calibrate {qualtrics} --out {tmp}/c/r.yaml",
     ["qualtrics.csv", "Qualtrics", "qualtrics: true", "--spec"]),
    ("calibrate-qualtrics-legacy", "calibrate {qualtrics_legacy} --out {tmp}/c/r.yaml",
     ["qualtrics_legacy.csv", "row 2", "qualtrics: true"]),
    ("calibrate-text-ratings", "calibrate {text} --out {tmp}/c/r.yaml",
     ["text.csv", "text ratings", 'levels: {{', '"Strongly agree": N']),
    ("calibrate-levels-miss-a-label", "calibrate {text} --spec {spec_levels_short} --out "
     "{tmp}/c/r.yaml", ["text.csv", "'Neither'", "levels:"]),
    ("calibrate-missing-value-code", "calibrate {missing_code} --out {tmp}/c/r.yaml",
     ["missing_code.csv", "act", "leave missing"]),
    ("calibrate-no-rating-column", "calibrate {no_ratings} --out {tmp}/c/r.yaml",
     ["no_ratings.csv", "accept or act", "columns: {{accept"]),
    ("calibrate-column-map-misses", "calibrate {no_ratings} --spec {spec_columns} --out "
     "{tmp}/c/r.yaml", ["spec_columns.yaml", "Q99"]),
    ("calibrate-spec-is-a-csv", "calibrate {pilot} --spec {pilot} --out {tmp}/c/r.yaml",
     ["--spec", "a CSV table"]),
    ("calibrate-replicates-zero", "calibrate {pilot} --replicates 0 --out {tmp}/c/r.yaml",
     ["--replicates 0", "at least 1"]),
    ("calibrate-out-is-a-folder", "calibrate {pilot} --out {folder}", ["--out", "file name"]),
    # analyze: the same table checks, the arguments' kinds
    ("analyze-a-workbook", "analyze {xlsx} {spec} --out {tmp}/a", ["pilot.xlsx", "Excel"]),
    ("analyze-the-database", "analyze {db} {spec} --out {tmp}/a",
     ["study.sqlite", "simstudy export"]),
    ("analyze-spec-is-a-csv", "analyze {pilot} {pilot} --out {tmp}/a",
     ["SPEC", "the table is the DATA argument"]),
    ("analyze-1-5-scale", "analyze {scale15} {spec} --out {tmp}/a",
     ["scale15.csv", "scale: [1, 5]"]),
    ("analyze-1-5-scale-for-the-7-point-study", "analyze {scale15} {study} --out {tmp}/a",
     ["scale15.csv", "no rating above 5", "scale: [1, 5]"]),
    ("analyze-0-10-scale", "analyze {scale10} {spec} --out {tmp}/a",
     ["scale10.csv", "outside the rating scale", "scale: ["]),
    ("analyze-sparsity-0", "analyze {sparsity0} {spec} --out {tmp}/a",
     ["sparsity0.csv", "add 1"]),
    ("analyze-duplicated-rows", "analyze {duplicated} {spec} --out {tmp}/a",
     ["duplicated.csv", "keep one row"]),
    ("analyze-qualtrics-export", "analyze {qualtrics} {spec} --out {tmp}/a",
     ["qualtrics.csv", "qualtrics: true"]),
    ("analyze-text-ratings", "analyze {text} {spec} --out {tmp}/a",
     ["text.csv", '"Strongly agree": N']),
    ("analyze-a-column-the-table-lacks", "analyze {pilot} {spec_typo} --out {tmp}/a",
     ["pilot.csv", "acts: not in the table", "columns: {{acts: EXPORT_COLUMN}}"]),
    ("analyze-rows-without-a-participant", "analyze {no_uid} {spec} --out {tmp}/a",
     ["no_uid.csv", "uid", "row 9", "delete rows nobody answered"]),
    ("analyze-missing-value-code", "analyze {missing_code} {spec} --out {tmp}/a",
     ["missing_code.csv", "leave missing"]),
    # audit, power, preregister: a table where a document or a run belongs
    ("audit-a-csv", "audit {pilot}", ["pilot.csv", "a CSV table", "simstudy run --out"]),
    ("audit-a-workbook", "audit {xlsx}", ["pilot.xlsx", "Excel", "run folder"]),
    ("audit-the-database", "audit {db}", ["study.sqlite", "run folder"]),
    ("audit-no-run-there", "audit {folder}", ["folder", "not a finished run",
                                              "simstudy run --out"]),
    ("power-a-csv", "power {pilot} --out {tmp}/p", ["PLAN", "a CSV table"]),
    ("power-response-is-a-csv", "power {study} --response {pilot} --out {tmp}/p",
     ["--response", "simstudy calibrate wrote"]),
    ("preregister-a-csv", "preregister {pilot} --out {tmp}/prereg.md",
     ["SCENARIO", "a CSV table"]),
    # a table where any document belongs, an output over an input
    ("run-a-csv", "run {pilot} --out {tmp}/r", ["pilot.csv", "a CSV table, not a YAML "
                                                "document", "simstudy analyze"]),
    ("validate-a-workbook", "validate {xlsx}", ["pilot.xlsx", "Excel", "simstudy analyze"]),
    ("validate-the-database", "validate {db}", ["study.sqlite", "simstudy export"]),
    ("study-a-csv", "study {pilot} --out {tmp}/s.csv", ["pilot.csv", "a CSV table"]),
    ("sweep-a-csv", "sweep {pilot} --out {tmp}/sw", ["pilot.csv", "a CSV table"]),
    ("calibrate-out-over-the-pilot", "calibrate {pilot} --out {pilot}",
     ["--out {pilot}", "would replace it", "another file name"]),
    ("preregister-out-over-the-study", "preregister {study} --out {study}",
     ["--out {study}", "would replace it"]),
    ("export-out-over-the-database", "export {db} --out {db}", ["--out {db}", "would replace"]),
    ("serve-db-below-a-file", "serve {study} --db {pilot}/answers.sqlite",
     ["--db", "not a directory"]),
    ("serve-db-is-the-study", "serve {study} --db {study}", ["--db", "a YAML document",
                                                             "new file name"]),
    ("preregister-power-folder-missing", "preregister {study} --power {tmp}/nowhere --out "
     "{tmp}/prereg.md", ["--power", "simstudy power"]),
]


@pytest.mark.parametrize("argv, expected", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_a_mistake_is_refused_in_one_line_with_the_fix(files, capsys, argv, expected):
    code = main(["--quiet", *argv.format(**files).split()])
    err = capsys.readouterr().err
    assert code == 2, err
    assert "Traceback" not in err
    lines = [ln for ln in err.splitlines() if not ln.startswith("note:")]
    assert len(lines) == 1, err
    for text in expected:
        assert text.format(**files) in lines[0], f"{text!r} not in: {lines[0]}"


def test_export_to_a_folder_leaves_no_temporary_file(files, capsys):
    assert main(["export", files["db"], "--out", files["folder"]]) == 2
    assert not list(Path(files["folder"]).iterdir())
    assert not list(Path(files["folder"]).parent.glob(".*tmp*"))


def test_blank_ratings_are_warned_with_the_fix_and_left_out(files, capsys, tmp_path):
    code = main(["calibrate", files["blanks"], "--replicates", "2", "--out",
                 str(tmp_path / "r.yaml")])
    err = capsys.readouterr().err
    assert code == 0 and "Traceback" not in err
    warned = [ln for ln in err.splitlines() if "(warning)" in ln]
    assert len(warned) == 1 and "blanks.csv: act" in warned[0] and "fill them" in warned[0]
    assert "ratings of 30 participants" in (tmp_path / "r.yaml").read_text()


@pytest.mark.parametrize("spec, table", [("spec_qualtrics", "qualtrics"),
                                         ("spec_qualtrics", "qualtrics_legacy")])
def test_the_stated_fix_reads_the_export(files, capsys, tmp_path, spec, table):
    # the refusal's fix, applied, reads the same ratings as the plain table
    from simstudy.study.hypotheses import StudyAnalysisSpec
    from simstudy.study.survey import load_ratings

    read = load_ratings(files[table], StudyAnalysisSpec.model_validate(
        yaml.safe_load(Path(files[spec]).read_text())), ["act"], ["sparsity"])
    pd.testing.assert_frame_equal(read, pd.read_csv(files["pilot"]))


def test_a_level_map_reads_text_ratings_as_their_numbers(files):
    from simstudy.study.hypotheses import StudyAnalysisSpec
    from simstudy.study.survey import load_ratings

    spec = StudyAnalysisSpec.model_validate({
        "models": [{"response": "act", "distance": "sparsity"}],
        "levels": {f"  {k.upper()} ": i + 1 for i, k in enumerate(LABELS)}})
    read = load_ratings(files["text"], spec, ["accept", "act"], ["sparsity"])
    pd.testing.assert_frame_equal(read, pd.read_csv(files["pilot"]))


def test_a_stated_7_point_scale_accepts_ratings_that_never_reach_6(files):
    from simstudy.study.hypotheses import StudyAnalysisSpec
    from simstudy.study.survey import load_ratings

    spec = StudyAnalysisSpec.model_validate({
        "models": [{"response": "act", "distance": "sparsity"}], "scale": [1, 7]})
    assert len(load_ratings(files["scale15"], spec, ["act"], ["sparsity"])) == 150


def test_serve_on_an_impossible_port_exits_2_in_its_own_process(files):
    # an interpreter abort (exit 134) here once came from the server's threads
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    proc = subprocess.run([sys.executable, "-m", "simstudy.cli", "serve", files["study"],
                           "--db", f"{files['tmp']}/p.sqlite", "--port", "80000"],
                          env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.strip().splitlines()[-1].startswith("simstudy serve: --port 80000")
    assert "Traceback" not in proc.stderr and "serving" not in proc.stderr
