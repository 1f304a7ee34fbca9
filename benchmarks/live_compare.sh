#!/usr/bin/env bash
# Live-study load before / after: `benchmarks/live.py` of revision BEFORE (server, bots and
# benchmark as that revision has them, from `git archive`) and of this checkout, alternated
# REPS times on the same machine, so both see the same load; each run's JSON goes to
# OUT/{before,after}-<k>.json and a table of the page latencies to stdout. Extra arguments go
# to both benchmarks (e.g. --think 2 6).
#
#   bash benchmarks/live_compare.sh main 3 /tmp/live-compare
#   bash benchmarks/live_compare.sh main 2 /tmp/live-compare-think --think 2 6
set -eu
BEFORE=${1:?revision}; REPS=${2:-3}; OUT=${3:-/tmp/live-compare}; shift 3 || true
HERE=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$OUT"; rm -rf "$OUT/before-tree"; mkdir "$OUT/before-tree"
git -C "$HERE" archive "$BEFORE" | tar -x -C "$OUT/before-tree"
for k in $(seq 1 "$REPS"); do
  for side in before after; do
    tree=$HERE; [ "$side" = before ] && tree=$OUT/before-tree
    echo "$(date -u +%H:%M:%S) $side run $k, uptime: $(uptime | sed 's/.*load/load/')" >&2
    (cd "$tree" && OMP_NUM_THREADS=1 PYTHONPATH=$tree python benchmarks/live.py "$@" \
       > "$OUT/$side-$k.json" 2> "$OUT/$side-$k.err")
  done
done
python - "$OUT" "$REPS" <<'PY'
import json, sys
out, reps = sys.argv[1], int(sys.argv[2])
kinds = ["rating", "recourse", "hare", "consent", "profile", "check", "entry"]
print("run        " + " ".join(f"{k:>15}" for k in kinds)
      + "   ans/s  lost imb  load(1m)")
for k in range(1, reps + 1):
    for side in ("before", "after"):
        d = json.load(open(f"{out}/{side}-{k}.json"))
        lat = d["latency_ms"]
        cells = " ".join(f"{lat[c]['median']:>7.0f}/{lat[c]['p95']:<7.0f}" if c in lat
                         else f"{'-':>15}" for c in kinds)
        print(f"{side}-{k:<4} {cells} {d['answers_submitted'] / d['seconds']:7.1f} "
              f"{d['answers_lost']:5d} {d['assignment_imbalance']:3d}  "
              f"{d['load_average'][0]:.1f}")
print("cells: median/p95 ms of each page class")
PY
