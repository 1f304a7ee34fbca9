"""Subcommands ``analyze``, ``power``, ``study`` and ``audit``.

* ``simstudy analyze DATA.csv SPEC.yaml --out DIR``: fits the GAMMs of the spec to a rating
  table (a real study's export or a simulated one), writes ``gamm.csv``/``gamm.json`` and one
  plot per model with the smooth and its 95% band; a table with a ``policy`` column also gets
  the policy contrast (``contrast.csv``, see :mod:`simstudy.study.contrast`).
* ``simstudy power PLAN.yaml|STUDY.yaml --out DIR``: runs (or resumes) a power analysis
  (:mod:`simstudy.planning.study_power`: a plan of the published design, or the design a
  study file runs); writes ``power.csv``, ``power.json`` and ``power.png``.
* ``simstudy study STUDY.yaml --out FILE.csv``: simulates one study of the published design.
* ``simstudy audit RUN_DIR|AUDIT.yaml [--by gender race] [--out report.html]``: a fairness
  audit of a finished run (see :mod:`simstudy.analysis.audit`); writes the HTML report, a
  Markdown summary beside it and the audit tables as CSV.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..core.documents import UsageError, load_document, with_overrides
from ..core.registry import build
from ..core.store import atomic_write, check_output_dir, check_output_file
from ..resources import is_shipped
from .run_commands import add_executor_arguments, executor_from_args

if TYPE_CHECKING:  # the handlers import numpy and pandas when they run: --help stays fast
    import numpy as np
    import pandas as pd

__all__ = ["register", "analyze", "plot_smooth", "run_audit", "read_ratings"]


def plot_smooth(model, x: np.ndarray, title: str, path: Path) -> None:
    """Plots b0 + f(x) with its 95% band over the observed range."""
    import numpy as np

    from ..core.plotting import plt, save_figure

    grid = np.linspace(np.min(x), np.max(x), 200)
    band = model.predict_band(grid)
    if getattr(model, "family", "gaussian") == "binomial":
        from scipy.special import expit

        band[["fit", "lower", "upper"]] = expit(band[["fit", "lower", "upper"]])
        title = f"P({title.split('~')[0].strip()} = 1) ~{title.split('~')[1]}"
    elif getattr(model, "family", "gaussian") == "ocat":
        title = f"latent {title}"
    fig, ax = plt.subplots(figsize=(5, 3.5))
    ax.fill_between(grid, band["lower"], band["upper"], alpha=0.3, label="95% band")
    ax.plot(grid, band["fit"], lw=2, label="intercept + smooth")
    ax.set_xlabel(title.split("~")[1].strip())
    ax.set_ylabel(title.split("~")[0].strip())
    t = model.test_
    stat = (f"F {t.F:.2f}" if getattr(model, "family", "gaussian") == "gaussian"
            else f"Chi.sq {t.stat:.2f}")
    ax.set_title(f"{title}: EDF {model.edf_:.2f}, {stat}, p {t.p:.3g}", fontsize=9)
    ax.legend(fontsize=8)
    fig.tight_layout()
    save_figure(fig, path)


def analyze(data: pd.DataFrame, spec, out: Path | None = None,
            source: str = "data") -> pd.DataFrame:
    """Fits every model of an :class:`~simstudy.analysis.analysis_spec.AnalysisSpec`.

    The table is checked first (:func:`~simstudy.analysis.inputs.check_rating_table`); a
    problem raises ``UsageError("SOURCE: column: reason")``. Warnings (about the table, or from
    a fit: basis size changed, REML not converged) go to stderr and to the ``warnings`` column.
    """
    import sys

    import pandas as pd

    from ..analysis.inputs import TableError, check_rating_table

    try:
        notes = check_rating_table(data, spec.group,
                                   [(m.response, m.distance, m.family) for m in spec.models],
                                   spec.scale)
    except TableError as exc:
        raise UsageError(f"{source}: {exc}") from exc
    for note in notes:
        print(f"{source}: {note} (warning)", file=sys.stderr)
    rows = []
    for m in spec.models:
        name = f"{m.response} ~ {m.distance}"
        try:
            model, row = _fit_one(data, spec, m)
        except ValueError as exc:
            raise UsageError(f"{source}: {name}: {exc}") from exc
        for note in row["warnings"].split("; ") if row["warnings"] else []:
            print(f"{source}: {name}: {note} (warning)", file=sys.stderr)
        rows.append(row)
        if out is not None and spec.plot:
            plot_smooth(model, pd.to_numeric(data[m.distance], errors="coerce").dropna()
                        .to_numpy(float), name, out / f"smooth_{m.response}_{m.distance}.png")
    return pd.DataFrame(rows)


def _fit_one(data: pd.DataFrame, spec, m):
    """One model of the spec (and its sensitivity fits); returns the model and its table row."""
    import warnings

    import pandas as pd

    from ..analysis.gamm import FitWarning, fit_gamm
    from ..analysis.ordinal import fit_ordinal

    sub = pd.DataFrame({spec.group: data[spec.group],
                        m.distance: pd.to_numeric(data[m.distance]),
                        m.response: pd.to_numeric(data[m.response])}).dropna()
    n_categories = None
    if m.family == "ocat":
        lo, hi = spec.scale if spec.scale is not None else (1, int(sub[m.response].max()))
        sub[m.response] = sub[m.response] - lo + 1       # categories 1..R
        n_categories = int(hi - lo + 1)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", FitWarning)
        model = fit_gamm(sub, m.response, m.distance, group=spec.group, k=m.k, family=m.family,
                         n_categories=n_categories)
        row = {"model": f"{m.response} ~ {m.distance}", **model.summary()}
        if spec.ordinal and m.family != "binomial":
            o = fit_ordinal(sub, m.response, m.distance, k=m.k)
            row.update({"ordinal_lr": o["lr_stat"], "ordinal_df": o["df"], "ordinal_p": o["p"],
                        "ordinal_converged": o["converged"]})
    if spec.exploratory_pygam:
        from pygam import LinearGAM, s

        g = LinearGAM(s(0, n_splines=8)).fit(sub[[m.distance]].to_numpy(),
                                             sub[m.response].to_numpy())
        # pygam ignores participants and its p-values are anti-conservative: exploratory.
        row["pygam_exploratory_p"] = float(g.statistics_["p_values"][0])
    notes = [str(w.message) for w in caught if issubclass(w.category, FitWarning)]
    row["warnings"] = "; ".join(dict.fromkeys(notes))
    return model, row


_TABLE_SUFFIXES = (".csv", ".tsv", ".txt")
_DOCUMENT_SUFFIXES = (".yaml", ".yml")


def _analyze_arguments(args) -> tuple[str, str]:
    """DATA and SPEC, recognising them given the other way round (a note says so)."""
    data, spec = str(args.data), str(args.spec)
    if data.lower().endswith(_DOCUMENT_SUFFIXES) and spec.lower().endswith(_TABLE_SUFFIXES):
        print(f"simstudy analyze: {data} is a document and {spec} a table: read as "
              f"'simstudy analyze {spec} {data}' (DATA comes first)", file=sys.stderr)
        return spec, data
    return data, spec


def _analysis_spec(path: str):
    """The analysis document, or the analysis a scenario's ``study:`` section implies (its
    hypotheses, the smooth of each distance hypothesis, the contrast against its baseline)."""
    from ..study.hypotheses import StudyAnalysisSpec

    if not _is_scenario(path):
        return load_document(path, StudyAnalysisSpec)
    from ..run.scenario import load_scenario, policy_name

    scenario, _ = load_scenario(path)
    study = scenario.study
    if study is None:
        raise UsageError(f"{path}: study: the scenario has no study section to analyse")
    models = [{"response": h.response, "distance": h.distance} for h in study.hypotheses
              if h.kind == "distance"] or [{"response": "act", "distance": "sparsity"}]
    baseline = study.baseline_policy([policy_name(p) for p in scenario.policies])
    alpha = study.power.alpha if study.power is not None else 0.05
    exclusions = list(study.live.exclusions) if study.live is not None else []
    return StudyAnalysisSpec.model_validate({
        "models": models, "contrast": {"baseline": baseline}, "ordinal": False,
        "hypotheses": [h.model_dump(exclude_unset=True) for h in study.hypotheses],
        "multiplicity": study.multiplicity, "alpha": alpha, "exclusions": exclusions})


def read_ratings(data_path: str, spec, spec_name: str | None, responses: list[str],
                 distances: list[str], command: str):
    """The rating table ``data_path`` read and checked as the analysis ``spec`` says
    (:func:`~simstudy.study.survey.load_ratings`); every problem is a ``UsageError`` naming
    the file (or the spec, for its column map) and the fix."""
    from ..analysis.inputs import TableError
    from ..study.survey import load_ratings

    try:
        return load_ratings(data_path, spec, responses, distances, "DATA", command)
    except TableError as exc:
        raise UsageError(str(exc) + ("" if spec_name else " (give it in --spec SPEC.yaml)")
                         if "analysis spec" in str(exc) else str(exc)) from None
    except OSError as exc:
        raise UsageError(f"{data_path}: cannot read it ({exc.strerror or exc})") from None
    except ValueError as exc:
        raise UsageError(f"{spec_name}: {exc}") from None


def _analyze_cmd(args) -> int:
    import pandas as pd

    from ..core.file_kinds import expect_kind

    data_path, spec_path = _analyze_arguments(args)
    expect_kind(spec_path, "yaml", "analyze", "SPEC")
    spec = _analysis_spec(spec_path)
    data = read_ratings(data_path, spec, spec_path, [m.response for m in spec.models],
                        [m.distance for m in spec.models], "analyze")
    out = check_output_dir(args.out)
    data = _excluded(data, spec, out, str(data_path))
    table = analyze(data, spec, out, source=str(data_path))
    table.to_csv(out / "gamm.csv", index=False)
    (out / "gamm.json").write_text(json.dumps(table.to_dict(orient="records"), indent=2))
    with pd.option_context("display.width", 200, "display.max_columns", 30):
        print(table[["model", "family", "n", "edf", "ref_df", "F", "chi_sq", "p", "sd_intercept",
                     "sd_slope", "sd_resid", "reml_converged"]].to_string(index=False))
    if spec.contrast.column in data.columns:
        _write_contrasts(data, spec, out)
    if spec.hypotheses:
        _write_hypotheses(data, spec, out, str(data_path))
    from ..run.dictionary import write_dictionary

    write_dictionary(out)
    return 0


def _excluded(data: pd.DataFrame, spec, out: Path, source: str) -> pd.DataFrame:
    """The rows left by the spec's exclusions (a live export's; printed and recorded in
    ``exclusions.csv``)."""
    from ..study.exclusions import apply_exclusions, record_exclusions

    if spec.group not in data:
        return data  # the table check names the missing column
    res = apply_exclusions(data, spec.exclusions, spec.group)
    if len(res.excluded) or res.notes or "status" in data:
        record_exclusions(res, out, source, spec.group)
    return res.kept


def _write_hypotheses(data: pd.DataFrame, spec, out: Path, source: str) -> None:
    """The stated hypotheses, tested as stated: ``hypotheses.csv`` and a print-out."""
    import pandas as pd

    from ..study.hypothesis_tests import evaluate_hypotheses

    try:
        table = evaluate_hypotheses(data, spec.hypotheses, spec.alpha, spec.multiplicity,
                                    group=spec.group, policy=spec.contrast.column)
    except ValueError as exc:
        raise UsageError(f"{source}: hypotheses: {exc}") from exc
    table.to_csv(out / "hypotheses.csv", index=False)
    with pd.option_context("display.width", 200, "display.max_columns", 30,
                           "display.max_colwidth", 60):
        print(table[["hypothesis", "label", "model", "estimate", "p", "p_adjusted", "rejected",
                     "failed"]].to_string(index=False, float_format=lambda v: f"{v:.3g}"))
    print(f"{int(table['rejected'].sum())} of {len(table)} hypotheses rejected at alpha "
          f"{spec.alpha} ({spec.multiplicity}); {int(table['failed'].sum())} fit(s) failed")


def _write_contrasts(data: pd.DataFrame, spec, out: Path) -> None:
    """The policy contrast of a table with a policy column: ``contrast.csv`` and a print-out."""
    import pandas as pd

    from ..study.contrast import policy_contrasts

    c = spec.contrast
    try:
        table = policy_contrasts(data, c.responses, c.column, spec.group, c.baseline, c.level)
    except ValueError as exc:
        raise UsageError(f"policy contrast: {exc}") from exc
    table.to_csv(out / "contrast.csv", index=False)
    with pd.option_context("display.width", 200, "display.max_columns", 30):
        print(table[["response", "model", "policy", "baseline", "estimate", "lower", "upper",
                     "p", "omnibus_p"]].to_string(index=False, float_format=lambda v: f"{v:.3g}"))


def _is_scenario(path: str) -> bool:
    """A scenario document (it names ``policies``) rather than a plan or study document."""
    from ..core.documents import load_yaml

    data = load_yaml(path)
    return isinstance(data, dict) and "policies" in data


def _scenario_power_cmd(args) -> int:
    from ..planning.study_power import run_study_power

    res = run_study_power(args.plan, args.out, simulations=args.simulations,
                          workers=args.workers, response_file=args.response,
                          uncertainty=args.uncertainty == "on")
    print_study_power(res)
    return 0


def print_study_power(res: dict) -> None:
    """The print-out of ``simstudy power SCENARIO``: power per test (failed fits in their own
    column), the smallest N, the assumed effects with their sources and the pool."""
    summary = res["summary"]
    print(res["table"].to_string(index=False, float_format=lambda v: f"{v:.3f}"))
    table = res["table"]
    key = "hypothesis" if "hypothesis" in table else "test"
    grid = sorted(set(table["n"]))
    target = summary["target_power"]
    print(f"smallest N whose power reaches {target}, by the lower bound of its "
          f"{summary['confidence']:.0%} interval (conservative) / by its point estimate; "
          f"read from the {res['read_from']}:")
    for test, grp in table.groupby(key, sort=False):
        readings = [grp[grp[c] >= target]["n"] for c in ("lower", "power")]
        lower, point = (str(int(r.min())) if len(r) else f"none up to {max(grid)}"
                        for r in readings)
        print(f"  {test} ({res['tests'].get(test, test)}): {lower} / {point}")
    print(f"assumed effects (response from {summary['response_from']}):")
    for e in res["effects"]:
        print(f"  {e['parameter']} = {e['value']}  [{e['source']}]")
    sens = summary.get("sensitivity")
    if sens:
        mde = sens["minimum_detectable"]
        print(f"sensitivity: power of {sens['hypothesis']} at N = {sens['n']} against "
              f"{sens['parameter']} (assumed {sens['assumed']:.3g}): minimum detectable "
              + (f"{mde:.3g}" if mde is not None else "not reached at the sizes simulated"))
    assurance = summary.get("assurance")
    if assurance:
        for row in assurance["compare"]:
            print(f"{row['hypothesis']} at N = {row['n']}: power at the point estimate "
                  f"{row['power']:.3f}, expected power over the calibration's uncertainty "
                  f"{row['expected_power']:.3f} ({row['reading']})")
    pool = res["pool"]
    print(f"pool: {pool['eligible']} eligible of {pool['rejected']} rejected applicants "
          f"({pool['rule']}); sample: {summary['sample']}")
    for c in pool["composition"]:
        print(f"  {c['column']}={c['value']}: {c['share_eligible']:.1%} of the eligible, "
              f"{c['share_rejected']:.1%} of the rejected")


def _power_cmd(args) -> int:
    from ..analysis.analysis_spec import PowerPlan
    from ..core.file_kinds import expect_kind
    from ..planning.study_power import run_plan_power

    expect_kind(args.plan, "yaml", "power", "PLAN")
    if args.response is not None:
        expect_kind(args.response, "yaml", "power", "--response",
                    "give the response.yaml that simstudy calibrate wrote")
    if _is_scenario(args.plan):
        return _scenario_power_cmd(args)
    if args.response is not None or args.uncertainty == "on":
        raise UsageError(f"{args.plan}: --response and --uncertainty apply to a scenario's "
                         "study; a power plan states its response in the plan")
    plan = with_overrides(load_document(args.plan, PowerPlan),
                          {"simulations": ("--simulations", args.simulations),
                           "workers": ("--workers", args.workers)}, args.plan)
    args.workers = plan.workers
    with executor_from_args(args) as executor:
        res = run_plan_power(args.plan, plan, args.out, executor)
    table, smallest, smallest_lower = res["table"], res["smallest_n"], res["smallest_n_lower"]
    print(table.to_string(index=False))
    print(f"smallest N whose estimated power reaches {plan.target_power}: "
          f"{_or_none(smallest, plan.participants)} (point estimate)")
    print(f"smallest N whose {plan.confidence:.0%} interval's lower bound reaches "
          f"{plan.target_power}: {_or_none(smallest_lower, plan.participants)} (conservative)")
    return 0


def _or_none(n: int | None, grid: list[int]) -> str:
    return str(n) if n is not None else f"none up to {max(grid)}; extend the grid"


def _study_cmd(args) -> int:
    from ..analysis.analysis_spec import StudySpec
    from ..core.rng import generator
    from ..study.simulated import ProfilePool, simulate_study

    if _is_scenario(args.study):
        import pandas as pd

        from ..run.runner import run_scenario

        out = Path(args.out if args.out != "study.csv" else "study_out")
        result = run_scenario(args.study, out)
        if "study.csv" not in result.manifest["outputs"]:

            raise UsageError(f"{args.study}: study: the scenario has no study section")
        table = pd.read_csv(out / "study.csv")
        print(f"{len(table)} ratings from {table['uid'].nunique()} participants -> "
              f"{out / 'study.csv'}")
        return 0
    spec = load_document(args.study, StudySpec)
    check_output_file(args.out)
    gen = generator(spec.seed, "study", 0)
    pool = ProfilePool(size=spec.pool_size).fit(gen)
    table = simulate_study(spec.participants, build("response", spec.response), gen,
                           items=spec.items, pool=pool, exclude_immutable=spec.exclude_immutable)
    if spec.exclude_immutable:
        dropped = spec.participants * spec.items - len(table)
        print(f"excluded {dropped} of {spec.participants * spec.items} ratings of recourses "
              "touching a feature the participant says cannot change (exclude_immutable: "
              "true, as in the published analysis)", file=sys.stderr)
    atomic_write(args.out, lambda tmp: table.to_csv(tmp, index=False))
    print(f"{len(table)} ratings from {table['uid'].nunique()} participants -> {args.out}")
    return 0


def run_audit(spec, run_dir: Path, out: Path, source: str = "simstudy audit"
              ) -> dict[str, Any]:
    """Audits a run directory as an :class:`~simstudy.analysis.analysis_spec.AuditSpec` says.

    Without ``by``, the audit groups by the world's sensitive features and the populations'
    added attributes that the run has (:func:`~simstudy.analysis.groups.run_codebook`).
    Without ``baseline``, a condition named ``baseline`` is used when the run has one; otherwise
    hidden disparities are reported as not assessed. A named baseline the run lacks is refused.
    """
    from ..analysis.audit import audit
    from ..analysis.groups import run_codebook
    from ..analysis.report import load_run, write_report
    from ..core.documents import DocumentError, DocumentProblem
    from ..run.dictionary import write_dictionary

    if not (run_dir / "recourse.parquet").exists() or not (run_dir / "manifest.json").exists():
        raise UsageError(f"{run_dir} is not a finished run (no recourse.parquet / "
                         "manifest.json); give the folder simstudy run --out wrote, or run it "
                         "to the end first")
    recourse, outcomes, manifest = load_run(run_dir)
    conditions = list(dict.fromkeys(recourse["condition"]))
    codebook, default_by = run_codebook(manifest)
    by = spec.by or [c for c in default_by if c in recourse.columns]
    if not by:
        raise DocumentError([DocumentProblem(source, "by", (
            f"the run has none of its world's sensitive or its populations' group columns "
            f"{default_by}; name the group columns to audit"))])
    missing = [c for c in by if c not in recourse.columns]
    if missing:
        raise DocumentError([DocumentProblem(source, "by", (
            f"the run has no column {missing}; group columns it has: "
            f"{[c for c in (*default_by, 'privileged') if c in recourse.columns]}"))])
    if spec.baseline is not None and spec.baseline not in conditions:
        raise DocumentError([DocumentProblem(source, "baseline", (
            f"unknown condition {spec.baseline!r}; the run's conditions are {conditions}"))])
    baseline = spec.baseline or ("baseline" if "baseline" in conditions else None)
    try:
        result = audit(recourse, by, baseline=baseline, metrics=spec.metrics,
                       outcomes=outcomes, n_bootstrap=spec.bootstrap,
                       n_permutations=spec.permutations, alpha=spec.alpha,
                       correction=spec.correction, family=spec.family, seed=spec.seed,
                       codebook=codebook)
    except ValueError as exc:
        raise UsageError(str(exc)) from exc
    paths = write_report(result, manifest, out, run_dir, spec.case_study, spec.notes)
    write_dictionary(Path(out).parent)
    return {**paths, "baseline": baseline}


def _audit_cmd(args) -> int:
    import pandas as pd

    from ..analysis.analysis_spec import AuditSpec
    from ..core.file_kinds import expect_kind

    target = Path(args.target)
    if target.is_file():
        expect_kind(target, "yaml", "audit", "RUN_DIR|AUDIT.yaml",
                    "simstudy audit reads a run folder (simstudy run --out DIR) or an audit "
                    "document (YAML); a rating table is analysed by simstudy analyze DATA.csv "
                    "SPEC.yaml")
        spec = load_document(target, AuditSpec)
        # relative to the document; a shipped one's run and report are the working directory's
        base = Path.cwd() if is_shipped(target) else target.parent
        run_dir = (base / spec.run).resolve()
        default_out = (base / spec.out) if spec.out else run_dir / "audit.html"
    else:
        spec = AuditSpec(run=str(target))
        run_dir, default_out = target, target / "audit.html"
    spec = with_overrides(spec, {field: (f"--{field}", getattr(args, field)) for field in
                                 ("by", "bootstrap", "permutations", "baseline", "seed")},
                          str(target) if target.is_file() else "simstudy audit")
    out = check_output_file(Path(args.out) if args.out else default_out)
    paths = run_audit(spec, run_dir, out, str(target) if target.is_file() else "simstudy audit")
    hidden = pd.read_csv(paths["hidden"])
    found = (f"{len(hidden)} hidden disparities" if paths["baseline"] is not None else
             "hidden disparities not assessed (no baseline condition)")
    print(f"wrote {paths['html']} ({paths['html'].stat().st_size / 1e6:.2f} MB), "
          f"{paths['markdown']}; {found}")
    return 0


def register(subparsers: argparse._SubParsersAction) -> None:
    """Adds ``analyze``, ``power``, ``study`` and ``audit``."""
    p = subparsers.add_parser("analyze", help="fit GAMMs to a rating table")
    p.add_argument("data", help="CSV with uid,item,sparsity,proximity,accept,act,...")
    p.add_argument("spec", help="analysis spec, or a scenario whose study states hypotheses "
                   "(YAML)")
    p.add_argument("--out", default="analysis_out", help="output folder")
    p.set_defaults(handler=_analyze_cmd)

    p = subparsers.add_parser("power", help="power analysis for planning a rating study")
    p.add_argument("plan", help="power plan, or a scenario with a study.power section (YAML)")
    p.add_argument("--out", default="power_out", help="output folder (resumable)")
    p.add_argument("--simulations", type=int, default=None, help="override simulations per N")
    p.add_argument("--response", default=None, metavar="CALIBRATION.yaml",
                   help="rate with a response calibrated by simstudy calibrate (scenario form)")
    p.add_argument("--uncertainty", choices=["on", "off"], default="off",
                   help="draw each study's parameters from the calibration's sampling "
                        "distribution: expected power beside power at the estimate")
    add_executor_arguments(p)
    p.set_defaults(handler=_power_cmd)

    p = subparsers.add_parser("study", help="simulate one rating study")
    p.add_argument("study", help="study document, or a scenario with a study section (YAML)")
    p.add_argument("--out", default="study.csv",
                   help="output CSV (for a scenario: the run directory, default study_out)")
    p.set_defaults(handler=_study_cmd)

    p = subparsers.add_parser("audit", help="fairness audit of a run: gaps between groups")
    p.add_argument("target", metavar="RUN_DIR|AUDIT.yaml",
                   help="a run directory, or an audit document (analysis/audit_*.yaml)")
    p.add_argument("--by", nargs="+", default=None,
                   help="group columns (default: gender and race where the run has them)")
    p.add_argument("--out", default=None, help="HTML report (default RUN_DIR/audit.html)")
    p.add_argument("--baseline", default=None,
                   help="no-personalization condition (default: 'baseline' if the run has it)")
    p.add_argument("--bootstrap", type=int, default=None, help="bootstrap resamples")
    p.add_argument("--permutations", type=int, default=None, help="permutations per gap")
    p.add_argument("--seed", type=int, default=None, help="seed of the resampling streams")
    p.set_defaults(handler=_audit_cmd)
