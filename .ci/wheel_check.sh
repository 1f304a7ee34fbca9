#!/usr/bin/env bash
# The package as a user installs it: builds the sdist and the wheel (python -m build), checks
# them (twine check --strict), installs the wheel into a fresh virtual environment outside the
# repository (torch==2.13.0 first, so pip takes the CPU build) and there, with no source tree on
# the path, runs `simstudy --version`, `simstudy examples`, `simstudy init demo`, the first
# command block of the project's README exactly as written (validate, run, audit, the study's
# run, power at a small size, preregister) and a small German-credit scenario (the world reads
# the data file shipped inside the package).
#
#   .ci/wheel_check.sh [WORK_DIR]      # WORK_DIR (default: a new temporary folder) is kept
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"
if [ $# -gt 0 ]; then
    work="$1"
else
    work="$(mktemp -d)"
    trap 'rm -rf "$work"' EXIT   # the virtual environment alone is over a gigabyte
fi
mkdir -p "$work"
work="$(cd "$work" && pwd)"
case "$work/" in "$repo"/*) echo "wheel_check: $work is inside the repository" >&2; exit 2;; esac
start=$(date +%s)
step() { echo "== $* ($(( $(date +%s) - start )) s)"; }

step "build sdist and wheel"
rm -rf "$work/dist"
python -m build --outdir "$work/dist" "$repo" > "$work/build.log" 2>&1 \
    || { tail -20 "$work/build.log"; exit 1; }
twine check --strict "$work"/dist/*

step "fresh virtual environment"
rm -rf "$work/venv" "$work/project"
python -m venv "$work/venv"
export PATH="$work/venv/bin:$PATH"
unset PYTHONPATH PYTHONHOME
export OMP_NUM_THREADS="${OMP_NUM_THREADS:-1}" MKL_NUM_THREADS="${MKL_NUM_THREADS:-1}"
export SIMSTUDY_CACHE="$work/cache"
pip_install() {
    pip install "$@" >> "$work/pip.log" 2>&1 || { tail -20 "$work/pip.log"; exit 1; }
}
pip_install torch==2.13.0
pip_install "$work"/dist/simstudy-*.whl
mkdir -p "$work/project" && cd "$work/project"
python - "$repo" <<'PY'
import sys
from pathlib import Path

import simstudy

where = Path(simstudy.__file__).resolve()
assert not where.is_relative_to(Path(sys.argv[1])), f"imported from the source tree: {where}"
assert not any(Path(p or ".").resolve() == Path(sys.argv[1]) for p in sys.path), sys.path
print(f"simstudy imported from {where}")
PY
[ "$(command -v simstudy)" = "$work/venv/bin/simstudy" ]

step "simstudy --version, examples"
simstudy --version
simstudy examples | tee examples.txt
shipped=$(cd "$repo/simstudy/resources" && ls scenarios/*.yaml populations/*.yaml studies/*.yaml \
          analysis/*.yaml sweeps/*.yaml | wc -l)
listed=$(grep -c '^example:' examples.txt)
[ "$listed" -eq "$shipped" ] || { echo "examples lists $listed documents, $shipped ship" >&2; exit 1; }

step "simstudy init demo, then the README's commands as written"
simstudy init demo
cd demo
awk '/^```bash$/ {n++; inside = (n == 1); next} /^```$/ {inside = 0} inside' README.md \
    > readme_commands.sh
cat readme_commands.sh
grep -q '^simstudy power ' readme_commands.sh && grep -q '^simstudy preregister ' readme_commands.sh
while IFS= read -r command; do
    step "$command"
    bash -euo pipefail -c "$command"
done < readme_commands.sh
[ -s runs/first/summary.csv ] && [ -s runs/power/power.csv ] && [ -s prereg.md ]

step "a German-credit scenario (the shipped data file)"
simstudy validate example:world_german_credit example:german_icarma example:german_levels
cat > german.yaml <<'YAML'
name: german-small
seed: 0
replications: 1
world: {kind: german_credit, flow: {epochs: 10, batch_size: 64, patience: 5}}
decision_model: {epochs: 100}
applicants: {max_applicants: 40}
policies:
  - {kind: oracle}
conditions:
  - {name: random, population: populations/hard_random.yaml}
YAML
simstudy run german.yaml --out runs/german --workers 1
[ -s runs/german/summary.csv ]

step "wheel check passed"
