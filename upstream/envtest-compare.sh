#!/usr/bin/env bash
# Runs operators' envtest suites twice each: on envtest's real control plane (kube-apiserver and
# etcd of the upstream build, as KUBEBUILDER_ASSETS) and against a fresh `fake-apiserver
# --envtest` (USE_EXISTING_CLUSTER=true); prints the wall time and the Ginkgo result of each run.
#
# Usage: upstream/envtest-compare.sh NAME=PACKAGE_DIR:TEST_BINARY ...
#   PACKAGE_DIR  the suite's package folder in the operator's checkout (the binary runs there)
#   TEST_BINARY  built there with `go test -c -o TEST_BINARY .`
# Needs: `upstream/build.sh build` done, kubectl on PATH, `cargo build -p fake-apiserver`.
# The recipe for each suite (checkout, CRDs to prepare): docs/envtest.md.
set -uo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(dirname "$HERE")
FAKE=${FAKE_APISERVER:-$REPO/target/debug/fake-apiserver}
CACHE=$(bash "$HERE/build.sh" dir)
ASSETS=$(mktemp -d -t kproof-envtest-assets.XXXXXX)
WORK=$(mktemp -d -t kproof-envtest-compare.XXXXXX)
trap 'rm -rf "$ASSETS"; [ -n "${FAKE_PID:-}" ] && kill "$FAKE_PID" 2>/dev/null' EXIT
for b in etcd kube-apiserver; do
  [ -x "$CACHE/bin/$b" ] || { echo "missing $CACHE/bin/$b: run upstream/build.sh build" >&2; exit 2; }
  ln -s "$CACHE/bin/$b" "$ASSETS/$b"
done
ln -s "$(command -v kubectl)" "$ASSETS/kubectl" || { echo "kubectl is not on PATH" >&2; exit 2; }
[ -x "$FAKE" ] || { echo "missing $FAKE: run cargo build -p fake-apiserver" >&2; exit 2; }

result() { sed 's/\x1b\[[0-9;]*m//g' "$1" | grep -aE 'Passed' | tail -1; }

for spec in "$@"; do
  name=${spec%%=*}; rest=${spec#*=}; dir=${rest%%:*}; bin=${rest#*:}
  for mode in real fake; do
    log="$WORK/$name-$mode.log"
    start=$(date +%s.%N)
    if [ "$mode" = real ]; then
      (cd "$dir" && KUBEBUILDER_ASSETS="$ASSETS" "$bin" -test.timeout 30m >"$log" 2>&1)
    else
      "$FAKE" --port 0 --envtest --kubeconfig "$WORK/kubeconfig" >"$WORK/fake.log" 2>&1 &
      FAKE_PID=$!
      for _ in $(seq 50); do [ -s "$WORK/kubeconfig" ] && break; sleep 0.1; done
      (cd "$dir" && USE_EXISTING_CLUSTER=true KUBECONFIG="$WORK/kubeconfig" "$bin" -test.timeout 30m >"$log" 2>&1)
      kill "$FAKE_PID" 2>/dev/null; wait "$FAKE_PID" 2>/dev/null; FAKE_PID=; rm -f "$WORK/kubeconfig"
    fi
    end=$(date +%s.%N)
    printf '%-24s %-5s %8.1f s  %s\n' "$name" "$mode" "$(echo "$end - $start" | bc)" "$(result "$log")"
  done
done
echo "logs: $WORK"
