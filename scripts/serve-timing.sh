#!/bin/bash
# Times every page and API endpoint of `tabula serve` over a store (docs/dashboard.md,
# "Page-load times"): the first request and the median of 5 more, with curl, and the load
# average before and after. Usage: scripts/serve-timing.sh DB RUN SWEEP [TABULA] [PORT]
# (RUN: a run id with iterations, SWEEP: a sweep's name; TABULA defaults to
# target/release/tabula).
set -eu
DB=$1 RUN=$2 SWEEP=$3 BIN=${4:-target/release/tabula} PORT=${5:-8777}
"$BIN" serve --db "$DB" --port "$PORT" > /dev/null &
SP=$!
trap 'kill $SP' EXIT
sleep 3
IT=$("$BIN" --db "$DB" show "$RUN" --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["iterations_done"])' 2>/dev/null || echo 1)
G=$("$BIN" --db "$DB" show "$RUN" --games "$IT" | sed -n 2p | awk '{print $2}')
echo "load before: $(cat /proc/loadavg)"
for u in / "/runs/$RUN" "/sweeps/$SWEEP" "/compare?runs=1,$RUN" "/games/$G" \
  "/api/runs?per_page=1000&settings=1" "/api/runs/$RUN" "/api/runs/$RUN/metrics" \
  "/api/runs/$RUN/games?iteration=$IT" /api/sweeps "/api/sweeps/$SWEEP" "/api/games/$G" \
  "/positions?run=$RUN" "/api/positions?run=$RUN" \
  /assets/uPlot.iife.min.js /assets/common.js; do
  first=$(curl -s -o /dev/null -w "%{time_total}" "http://127.0.0.1:$PORT$u")
  ts=""
  for _ in 1 2 3 4 5; do ts="$ts $(curl -s -o /tmp/serve-timing.out -w "%{time_total}" "http://127.0.0.1:$PORT$u")"; done
  med=$(echo $ts | tr ' ' '\n' | sort -n | sed -n 3p)
  printf "%-40s first %6.3f s  median %6.3f s  %8d bytes\n" "${u:0:40}" "$first" "$med" "$(stat -c %s /tmp/serve-timing.out)"
done
echo "load after: $(cat /proc/loadavg)"
