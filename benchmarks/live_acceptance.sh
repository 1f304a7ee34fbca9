#!/usr/bin/env bash
# The live study's acceptance: an uninterrupted run (A, /tmp/accA) against a run whose server
# is SIGKILLed after about 300 answers, restarted on the same database and given the same bots
# again (B, /tmp/accB): both exports must be identical, with 60 uids, every shown plan rated,
# no platform ID, and `simstudy analyze` must fit the policy contrast. Needs sqlite3 and ports
# 8811 / 8812.
set -u
cd "$(dirname "$0")/.."
export OMP_NUM_THREADS=1 PYTHONPATH=$PWD
S=simstudy/resources/studies/personalization.yaml
for D in /tmp/accA /tmp/accB; do rm -rf $D; mkdir -p $D; done
# A: uninterrupted
python -m simstudy.cli serve $S --db /tmp/accA/s.sqlite --port 8811 --entry-limit none > /tmp/accA/serve.log 2>&1 & echo $! > /tmp/accA/pid
T0=$(date +%s); python -m simstudy.cli bots $S --url http://127.0.0.1:8811 --participants 60 --concurrency 20 > /tmp/accA/bots.json 2>/tmp/accA/bots.err; echo "A bots rc=$? seconds=$(( $(date +%s) - T0 ))"
kill $(cat /tmp/accA/pid)
python -m simstudy.cli export /tmp/accA/s.sqlite --out /tmp/accA/export/study.csv
# B: killed in the middle
python -m simstudy.cli serve $S --db /tmp/accB/s.sqlite --port 8812 --entry-limit none > /tmp/accB/serve.log 2>&1 & echo $! > /tmp/accB/pid
python -m simstudy.cli bots $S --url http://127.0.0.1:8812 --participants 60 --concurrency 20 > /tmp/accB/bots1.json 2>/tmp/accB/bots1.err & BOTS=$!
for i in $(seq 1 600); do sleep 0.2; n=$(sqlite3 /tmp/accB/s.sqlite "select count(*) from answers" 2>/dev/null || echo 0); [ "${n:-0}" -gt 300 ] && break; done
echo "B answers at SIGKILL: $n"; kill -9 $(cat /tmp/accB/pid)
wait $BOTS; echo "B first bots rc=$? $(python -c "import json;d=json.load(open('/tmp/accB/bots1.json'));print(d['completed'] if 'completed' in d else 0,'completed',d['errors'],'errors')")"
sqlite3 /tmp/accB/s.sqlite "select status, count(*) from participants group by status"
python -m simstudy.cli serve $S --db /tmp/accB/s.sqlite --port 8812 --entry-limit none > /tmp/accB/serve2.log 2>&1 & echo $! > /tmp/accB/pid
python -m simstudy.cli bots $S --url http://127.0.0.1:8812 --participants 60 --concurrency 20 > /tmp/accB/bots2.json 2>/tmp/accB/bots2.err; echo "B rerun bots rc=$?"
kill $(cat /tmp/accB/pid)
python -m simstudy.cli export /tmp/accB/s.sqlite --out /tmp/accB/export/study.csv
cmp /tmp/accA/export/study.csv /tmp/accB/export/study.csv && echo "study.csv identical"
cmp /tmp/accA/export/study_open.csv /tmp/accB/export/study_open.csv && echo "study_open.csv identical"
for D in /tmp/accA /tmp/accB; do echo "$D answers rows/distinct: $(sqlite3 $D/s.sqlite 'select count(*), count(distinct uid||page) from answers') sha=$(sqlite3 $D/s.sqlite 'select uid,page,value from answers order by uid,page' | sha256sum | cut -c1-16)"; done
python - <<'PY'
import pandas as pd, sqlite3
t = pd.read_csv("/tmp/accA/export/study.csv")
db = sqlite3.connect("/tmp/accA/s.sqlite")
items = db.execute("select count(*) from items").fetchone()[0]
rated = db.execute("select count(*) from answers where page like 'rating:%'").fetchone()[0]
print("uids", t.uid.nunique(), "rows", len(t), "items shown", items, "rated", rated)
print("conditions", t.drop_duplicates("uid").condition.value_counts().to_dict())
PY
grep -rlE "BOT-PID|BOT-SESSION|BOT-STUDY" /tmp/accA/export /tmp/accB/export || echo "no platform ID in the exports"
python -m simstudy.cli analyze /tmp/accA/export/study.csv simstudy/resources/analysis/study_personalization.yaml --out /tmp/accA/analysis > /tmp/accA/analyze.txt 2>&1; echo "analyze rc=$?"
