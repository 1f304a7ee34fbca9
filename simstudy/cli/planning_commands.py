"""Subcommands ``calibrate`` and ``preregister``: the planning loop's pilot and its record.

* ``simstudy calibrate DATA.csv [--spec analysis.yaml] --out response.yaml``: fits the rating
  model to pilot ratings by maximum likelihood (:mod:`simstudy.study.calibration`); writes the
  ``response:`` entry with the data's sha256 and the estimates' covariance (for
  ``simstudy power SCENARIO --response response.yaml [--uncertainty on]``), the intervals
  (``*_intervals.csv``) and the goodness-of-fit table (``*_fit.csv``) beside it.
* ``simstudy preregister SCENARIO [--power DIR] --out prereg.md``: the preregistration page of
  a scenario's study: hypotheses and their tests, alpha and multiplicity, N with its power and
  interval (from ``simstudy power SCENARIO --out DIR``), the assumed effects and their sources,
  exclusions, the sha256 of the scenario file.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from ..core.documents import UsageError, load_document
from ..core.store import atomic_write_text, check_output_file

__all__ = ["register", "preregistration"]


def _calibrate_cmd(args) -> int:
    import pandas as pd
    import yaml

    from ..core.store import file_sha256
    from ..study.calibration import calibrate, calibration_document, goodness_of_fit
    from ..study.hypotheses import StudyAnalysisSpec
    from ..study.survey import read_rating_table

    out = check_output_file(args.out)
    spec = load_document(args.spec, StudyAnalysisSpec) if args.spec else None
    group = spec.group if spec else "uid"
    try:
        table = (read_rating_table(args.data, spec.separator, spec.qualtrics, spec.columns)
                 if spec else read_rating_table(args.data))
    except (OSError, UnicodeError, pd.errors.ParserError, pd.errors.EmptyDataError) as exc:
        raise UsageError(f"cannot read {args.data}: {exc}") from exc
    except ValueError as exc:
        raise UsageError(f"{args.spec}: {exc}") from exc
    if spec is not None and spec.scale is not None and tuple(spec.scale) != (1, 7):
        raise UsageError(f"{args.spec}: scale: the rating model is calibrated on a 1..7 scale, "
                         f"not {list(spec.scale)}")
    try:
        fit = calibrate(table, args.ratings, args.distance, group,
                        d_min=1.0 if args.distance == "sparsity" else 0.0,
                        scale=tuple(spec.scale) if spec and spec.scale else None)
    except ValueError as exc:
        raise UsageError(f"{args.data}: {exc}") from exc
    doc = calibration_document(fit, args.data, file_sha256(args.data))
    header = (f"# simstudy calibrate {args.data}: the rating model fitted by maximum likelihood "
              f"to {fit.n_ratings_} ratings of {fit.n_participants_} participants\n")
    atomic_write_text(out, header + yaml.safe_dump(doc, sort_keys=False))
    stem = out.with_suffix("")
    fit.intervals_.to_csv(f"{stem}_intervals.csv", index=False)
    gof = goodness_of_fit(fit, table, group, replicates=args.replicates, seed=args.seed)
    gof.to_csv(f"{stem}_fit.csv", index=False)
    with pd.option_context("display.width", 200):
        print(fit.intervals_.to_string(index=False, float_format=lambda v: f"{v:.3f}"))
    outside = gof[(gof["observed"] < gof["simulated_lower"])
                  | (gof["observed"] > gof["simulated_upper"])]
    large = gof[gof["n_ratings"] >= 20]
    gap = ((large["observed"] - large["simulated"]).abs().max() if len(large) else float("nan"))
    print(f"goodness of fit: {len(outside)} of {len(gof)} observed rating shares (per "
          f"response, {args.distance} and rating) outside the 95% range of "
          f"{args.replicates} studies simulated from the fit; largest gap where a "
          f"{args.distance} has 20 or more ratings: {gap:.3f}")
    for warning in fit.warnings_:
        print(f"warning: {args.data}: {warning}", file=__import__("sys").stderr)
    print(f"wrote {out}, {stem}_intervals.csv, {stem}_fit.csv")
    return 0


def preregistration(scenario_path: str | Path, power_dir: str | Path | None) -> str:
    """The preregistration page (Markdown) of a scenario's study (see the module docstring)."""
    from ..core.store import file_sha256
    from ..run.study_power import study_setup
    from ..study.effects import parameter_table
    from ..study.hypotheses import hypothesis_names

    setup = study_setup(scenario_path)
    scenario, study = setup["scenario"], setup["study"]
    power = None
    if power_dir is not None:
        path = Path(power_dir) / "power.json"
        if not path.exists():
            raise UsageError(f"--power {power_dir}: no power.json (run simstudy power "
                             f"{scenario_path} --out {power_dir} first)")
        power = json.loads(path.read_text())
        sha = file_sha256(scenario_path)
        if power.get("scenario_sha256", sha) != sha:
            raise UsageError(f"--power {power_dir}: its power.json was computed from another "
                             f"version of {scenario_path} (sha256 "
                             f"{power['scenario_sha256'][:12]}, now {sha[:12]}); run simstudy "
                             "power again")
    spec = study.power
    alpha = spec.alpha if spec is not None else 0.05
    names = hypothesis_names(study.hypotheses)
    lines = [f"# Preregistration: {scenario.name}", "",
             f"Study file: `{scenario_path}` (sha256 `{file_sha256(scenario_path)}`).", ""]
    if scenario.description:
        lines += [scenario.description.strip(), ""]
    lines += ["## Hypotheses and tests", ""]
    if not study.hypotheses:
        lines += ["No confirmatory hypotheses are stated (`study.hypotheses` is empty): every "
                  "test of this study is exploratory.", ""]
    for name, h in zip(names, study.hypotheses, strict=True):
        lines.append(f"- **{name}**: {h.label()}.")
        lines.append(f"  Test: {_test_words(h)}")
    lines += ["", f"Significance level alpha = {alpha}; multiplicity: "
              f"{_MULTIPLICITY[study.multiplicity]} over the {len(names)} hypotheses. A "
              "hypothesis whose model fails to fit or converge is reported as failed, not as "
              "not significant.", ""]
    lines += ["## Sample size", ""]
    if power is None:
        lines += ["Not computed: give `--power DIR` (the output of `simstudy power`).", ""]
    else:
        lines += _sample_size(power, names)
    lines += ["## Assumed effects and their sources", ""]
    effects = power["effects"] if power is not None else parameter_table(
        setup["response"], sorted({h.response for h in study.hypotheses}) or None)
    source = power["response_from"] if power is not None else setup["where"]
    lines += [f"Response model from {source}.", "", "| parameter | value | source |",
              "|---|---|---|"]
    lines += [f"| {e['parameter']} | {e['value']} | {e['source']} |" for e in effects]
    if study.live is not None:
        from ..live.prereg import live_lines

        lines += [""] + live_lines(scenario_path)
    lines += ["", "## Participants and exclusions", ""]
    lines.append(f"- Participants: {study.participants} rejected applicants of condition "
                 f"`{study.condition or scenario.conditions[0].name}`, replication "
                 f"{study.replication}, among those every study policy found a recourse for.")
    if power is not None:
        pool = power["pool"]
        lines.append(f"- Eligible pool: {pool['eligible']} of {pool['rejected']} rejected "
                     f"applicants ({pool['rule']}); composition against the rejected:")
        lines += [f"  - {c['column']}={c['value']}: {c['share_eligible']:.1%} eligible, "
                  f"{c['share_rejected']:.1%} rejected" for c in pool["composition"]]
        lines.append(f"- Sampling: {power.get('sample', 'without_replacement')}.")
    lines.append("- Ratings of recourses needing a feature the participant cannot change: "
                 + ("excluded (`exclude_blocked: true`)." if study.exclude_blocked else
                    "kept (`exclude_blocked: false`); `blocked` is recorded per rating."))
    if study.random_others:
        lines.append(f"- Each participant also rates {study.random_others} random recourse(s) "
                     "(policy `random`).")
    lines += ["", "## Analysis", "", "```", f"simstudy analyze DATA.csv {scenario_path} "
              "--out analysis", "```", ""]
    return "\n".join(lines)


_MULTIPLICITY = {"holm": "Holm's step-down correction", "bonferroni": "Bonferroni correction",
                 "none": "no correction"}


def _test_words(h) -> str:
    sided = {"greater": "one-sided (greater)", "less": "one-sided (less)",
             "decreasing": "one-sided (decreasing)", "increasing": "one-sided (increasing)",
             "two-sided": "two-sided"}[h.direction]
    adjust = f", adjusted for {', '.join(h.adjust)}" if h.adjust else ""
    if h.kind == "contrast":
        term = f"1[policy = {h.contrast[0]}] on the ratings of {h.contrast[0]} and {h.contrast[1]}"
    elif h.kind == "distance":
        term = f"the linear slope of {h.distance}" + (f" ({h.policy}'s ratings)" if h.policy
                                                      else "")
        if h.smooth:
            adjust += f"; the smooth s({h.distance}) is reported beside it, not tested"
    else:
        term = f"1[{h.by} = {h.gap[0]}] among {h.gap[0]} and {h.gap[1]}" + (
            f" ({h.policy}'s ratings)" if h.policy else "")
    return (f"{h.response} ~ {term} + (1 | participant), linear mixed model by REML, Wald z, "
            f"{sided}{adjust}.")


def _sample_size(power: dict, names: list[str]) -> list[str]:
    import pandas as pd

    table = pd.DataFrame(power["table"])
    key = "hypothesis" if "hypothesis" in table else "test"
    target = power["target_power"]
    level = power["confidence"]
    main = "all" if "all" in set(table[key]) else table[key].iloc[0]
    grp = table[table[key] == main].sort_values("n")
    by_lower = grp[grp["lower"] >= target]
    by_point = grp[grp["power"] >= target]
    chosen = power["smallest_n"].get(main)
    out = [f"Target power {target} for {'all hypotheses jointly' if main == 'all' else main}, "
           f"from {power['simulations']} simulated studies per N.", ""]
    out.append(f"- Smallest N whose {level:.0%} interval's lower bound reaches the target "
               f"(conservative): {int(by_lower['n'].min()) if len(by_lower) else 'none'}.")
    out.append(f"- Smallest N whose point estimate reaches it: "
               f"{int(by_point['n'].min()) if len(by_point) else 'none'}.")
    if chosen is not None:
        row = grp[grp["n"] == chosen].iloc[0]
        out.append(f"- Planned N = {chosen} (read from the {power['read_from']}): power "
                   f"{row['power']:.3f} [{row['lower']:.3f}, {row['upper']:.3f}], "
                   f"{int(row['failed'])} failed fit(s) of {int(row['simulations'])}.")
    out += ["", "| test | N | power | interval | failed fits |", "|---|---|---|---|---|"]
    for _, r in table.iterrows():
        failed = int(r["failed"]) if "failed" in r else "-"
        out.append(f"| {r[key]} | {int(r['n'])} | {r['power']:.3f} | [{r['lower']:.3f}, "
                   f"{r['upper']:.3f}] | {failed} |")
    sens = power.get("sensitivity")
    if sens:
        mde = sens["minimum_detectable"]
        out += ["", f"Minimum detectable {sens['parameter']} at N = {sens['n']} for "
                f"{sens['hypothesis']}: " + (f"{mde:.3g}" if mde is not None else
                                            "not reached") + f" (assumed {sens['assumed']:.3g})."]
    assurance = power.get("assurance")
    if assurance:
        out += [""] + [f"- {r['hypothesis']} at N = {r['n']}: expected power over the "
                       f"calibration's uncertainty {r['expected_power']:.3f} against "
                       f"{r['power']:.3f} at the point estimate." for r in assurance["compare"]]
    return [*out, ""]


def _preregister_cmd(args) -> int:
    out = check_output_file(args.out)
    text = preregistration(args.scenario, args.power)
    atomic_write_text(out, text)
    print(f"wrote {out}")
    return 0


def register(subparsers: argparse._SubParsersAction) -> None:
    """Adds ``calibrate`` and ``preregister``."""
    p = subparsers.add_parser("calibrate", help="fit the rating model to pilot ratings")
    p.add_argument("data", help="pilot ratings (CSV: uid, sparsity, accept and/or act, "
                                "optionally blocked)")
    p.add_argument("--spec", default=None, help="analysis spec: group column, scale, how to "
                                                "read the export (YAML)")
    p.add_argument("--distance", default="sparsity", choices=["sparsity", "proximity"])
    p.add_argument("--ratings", nargs="+", default=None, choices=["accept", "act"],
                   help="ratings to fit (default: those the data has)")
    p.add_argument("--replicates", type=int, default=200,
                   help="studies simulated for the goodness-of-fit table")
    p.add_argument("--seed", type=int, default=0, help="seed of the goodness-of-fit draws")
    p.add_argument("--out", default="response.yaml", help="the calibrated response (YAML)")
    p.set_defaults(handler=_calibrate_cmd)

    p = subparsers.add_parser("preregister", help="the preregistration page of a study")
    p.add_argument("scenario", help="scenario with a study section (YAML)")
    p.add_argument("--power", default=None, metavar="DIR",
                   help="output of simstudy power SCENARIO (for N and its power)")
    p.add_argument("--out", default="prereg.md", help="Markdown page")
    p.set_defaults(handler=_preregister_cmd)
