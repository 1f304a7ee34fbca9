"""Writes the pilot tables whose ``ordinal::clmm`` fits ``tests/test_calibration.py`` compares
``calibrate`` with (run from the repository root).

Usage: python tests/data/clmm/make_data.py
Then: Rscript tests/data/clmm/make_reference.R   (writes the clmm fits as JSON)
"""

from pathlib import Path

import numpy as np

from simstudy.examples import RECOVERY_TRUTH
from simstudy.people.response_params import RatingResponseParams
from simstudy.study.calibration import simulate_pilot

HERE = Path(__file__).parent

#: Person effects wide against the rating noise (SD 2.0 against 0.6): a fixed 10-point
#: Gauss-Hermite rule misses the integral most here.
WIDE = {**RECOVERY_TRUTH,
        "accept": {**RECOVERY_TRUTH["accept"], "sd_intercept": 2.0, "sd_noise": 0.6},
        "act": {**RECOVERY_TRUTH["act"], "sd_intercept": 1.8, "sd_noise": 0.7}}

#: name: (truth, participants, items, seed)
PILOTS = {
    "recovery_40x6": (RECOVERY_TRUTH, 40, 6, 11),
    "wide_30x5": (WIDE, 30, 5, 12),
    "small_12x4": (RECOVERY_TRUTH, 12, 4, 13),
}

if __name__ == "__main__":
    for name, (truth, people, items, seed) in PILOTS.items():
        model = RatingResponseParams.model_validate(truth).build()
        table = simulate_pilot(model, people, np.random.default_rng(seed), items=items)
        table.to_csv(HERE / f"{name}.csv", index=False)
        print(name, len(table), "rows;", "accept levels", sorted(table["accept"].unique()),
              "act levels", sorted(table["act"].unique()))
