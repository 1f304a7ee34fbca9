"""Subcommands ``calibrate`` and ``preregister``: the planning loop's pilot and its record.

* ``simstudy calibrate DATA.csv [--spec analysis.yaml] --out response.yaml``: fits the rating
  model to pilot ratings by maximum likelihood (:mod:`simstudy.study.calibration`); writes the
  ``response:`` entry with the data's sha256 and the estimates' covariance (for
  ``simstudy power SCENARIO --response response.yaml [--uncertainty on]``), the intervals
  (``*_intervals.csv``: Wald for intercepts, slopes and the blocked penalty, profile
  likelihood for SDs and the correlation, on Student's t with participants - 1 degrees of
  freedom unless ``--reference normal``; chosen by measured coverage,
  ``docs/results/calibration.md``) and the goodness-of-fit table (``*_fit.csv``) beside it.
* ``simstudy preregister SCENARIO [--power DIR] --out prereg.md``: the preregistration page of
  a scenario's study (:mod:`simstudy.planning.preregistration`).
"""

from __future__ import annotations

import argparse
import sys

from ..core.documents import UsageError, load_document
from ..core.store import atomic_write_text, check_output_file

__all__ = ["register"]


def _calibrate_cmd(args) -> int:
    import pandas as pd
    import yaml

    from ..analysis.inputs import TableError, check_rating_table
    from ..core.file_kinds import expect_kind
    from ..core.store import file_sha256
    from ..study.calibration import calibrate, calibration_document, goodness_of_fit
    from ..study.hypotheses import StudyAnalysisSpec
    from .study_commands import read_ratings

    out = check_output_file(args.out)
    if args.replicates < 1:
        raise UsageError(f"--replicates {args.replicates}: at least 1 (studies simulated for "
                         "the goodness-of-fit table)")
    if args.spec is not None:
        expect_kind(args.spec, "yaml", "calibrate", "--spec")
        spec = load_document(args.spec, StudyAnalysisSpec)
    else:
        spec = StudyAnalysisSpec.model_validate({"models": [{"response": "act",
                                                             "distance": args.distance}]})
    if spec.scale is not None and tuple(spec.scale) != (1, 7):
        raise UsageError(f"{args.spec}: scale: the rating model is calibrated on the 1..7 "
                         f"scale, not {list(spec.scale)}; calibrate a pilot run on the "
                         "study's 7-point scale (simstudy analyze reads other scales)")
    table = read_ratings(args.data, spec, args.spec, args.ratings or ["accept", "act"],
                         [args.distance], "calibrate")
    ratings = args.ratings or [r for r in ("accept", "act") if r in table]
    if not ratings:
        raise UsageError(f"{args.data}: no rating column accept or act (its columns: "
                         f"{', '.join(map(str, table.columns[:12]))}); name the export's "
                         "columns in --spec SPEC.yaml: columns: {accept: COLUMN, act: COLUMN}")
    try:
        notes = check_rating_table(table, spec.group, [(r, args.distance, "gaussian")
                                                       for r in ratings], (1, 7))
    except TableError as exc:
        raise UsageError(f"{args.data}: {exc}") from None
    for note in notes:
        print(f"{args.data}: {note} (warning)", file=sys.stderr)
    try:
        fit = calibrate(table, ratings, args.distance, spec.group,
                        d_min=1.0 if args.distance == "sparsity" else 0.0,
                        scale=tuple(spec.scale) if spec.scale else None,
                        reference=args.reference)
    except ValueError as exc:
        raise UsageError(f"{args.data}: {exc}") from exc
    doc = calibration_document(fit, args.data, file_sha256(args.data))
    header = (f"# simstudy calibrate {args.data}: the rating model fitted by maximum likelihood "
              f"to {fit.n_ratings_} ratings of {fit.n_participants_} participants\n")
    atomic_write_text(out, header + yaml.safe_dump(doc, sort_keys=False))
    stem = out.with_suffix("")
    fit.intervals_.to_csv(f"{stem}_intervals.csv", index=False)
    gof = goodness_of_fit(fit, table, spec.group, replicates=args.replicates, seed=args.seed)
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
        print(f"warning: {args.data}: {warning}", file=sys.stderr)
    print(f"wrote {out}, {stem}_intervals.csv, {stem}_fit.csv")
    return 0


def _preregister_cmd(args) -> int:
    from ..core.file_kinds import expect_kind
    from ..planning.preregistration import preregistration

    expect_kind(args.scenario, "yaml", "preregister", "SCENARIO")
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
    p.add_argument("--reference", default="t", choices=["t", "normal"],
                   help="quantile of the 95%% intervals (Wald for intercepts, slopes and the "
                   "penalty; profile likelihood for SDs and the correlation): Student's t on "
                   "participants - 1 degrees of freedom (default, chosen by measured "
                   "coverage) or the normal")
    p.add_argument("--out", default="response.yaml", help="the calibrated response (YAML)")
    p.set_defaults(handler=_calibrate_cmd)

    p = subparsers.add_parser("preregister", help="the preregistration page of a study")
    p.add_argument("scenario", help="scenario with a study section (YAML)")
    p.add_argument("--power", default=None, metavar="DIR",
                   help="output of simstudy power SCENARIO (for N and its power)")
    p.add_argument("--out", default="prereg.md", help="Markdown page")
    p.set_defaults(handler=_preregister_cmd)
