#!/usr/bin/env bash
# A fuzzing campaign: every target (or those named) for SECS seconds each, LANES at a time, from
# the corpora under corpus/ (grown in place), niced so that other work on the machine keeps its
# CPU. Prints one Markdown row per target: executions, coverage, corpus, CPU seconds (user+sys,
# measured by /usr/bin/time, so a niced run that got less CPU than its wall time says so) and
# what it found. A crash stops that target and leaves its input under artifacts/<target>/.
#
#   cd fuzz && ./campaign.sh 600 2                 # 10 minutes of each target, two at a time
#   ./campaign.sh 60 1 quantity selectors          # only these
#
# Needs the targets built first (README.md here): cargo +nightly fuzz build -O -a --sanitizer none
set -uo pipefail
cd "$(dirname "$0")"

secs=${1:?seconds per target}
lanes=${2:-1}
shift 2 2>/dev/null || shift $#
bin=target/x86_64-unknown-linux-gnu/release
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
  mapfile -t targets < <(cargo +nightly fuzz list | grep -vx seed)
fi
for t in "${targets[@]}"; do
  [ -x "$bin/$t" ] || { echo "campaign: $bin/$t is not built: cargo +nightly fuzz build -O -a --sanitizer none" >&2; exit 2; }
done
logs=campaign-logs
mkdir -p "$logs"

run_one() {
  local t=$1
  mkdir -p "corpus/$t" "artifacts/$t"
  # -rss_limit_mb: the server targets hold a whole API server; 4 GiB is far above their use.
  /usr/bin/time -f 'cpu_seconds %U %S' -o "$logs/$t.time" \
    nice -n 19 "$bin/$t" -max_total_time="$secs" -rss_limit_mb=4096 -print_final_stats=1 \
    -artifact_prefix="artifacts/$t/" "corpus/$t" >"$logs/$t.log" 2>&1
  echo $? >"$logs/$t.rc"
}

running=0
for t in "${targets[@]}"; do
  run_one "$t" &
  running=$((running + 1))
  if [ "$running" -ge "$lanes" ]; then
    wait -n
    running=$((running - 1))
  fi
done
wait

echo "| target | executions | coverage (edges) | corpus | CPU seconds | found |"
echo "|---|---:|---:|---:|---:|---|"
for t in "${targets[@]}"; do
  log="$logs/$t.log"
  execs=$(grep -m1 '^stat::number_of_executed_units' "$log" | awk '{print $2}')
  cov=$(grep -E '^#[0-9]+' "$log" | grep -o 'cov: [0-9]*' | tail -1 | awk '{print $2}')
  corpus=$(find "corpus/$t" -type f | wc -l)
  cpu=$(awk '/^cpu_seconds/ {printf "%.0f", $2 + $3}' "$logs/$t.time" 2>/dev/null)
  rc=$(cat "$logs/$t.rc")
  if [ "$rc" = 0 ]; then
    found=nothing
  else
    found="exit $rc: $(grep -m1 -E 'ERROR: libFuzzer|panicked at|deadly signal|timeout' "$log" | cut -c1-120); $(grep -m1 -o 'artifacts/[^ ]*' "$log")"
  fi
  echo "| \`$t\` | ${execs:-?} | ${cov:-?} | $corpus | ${cpu:-?} | $found |"
done
