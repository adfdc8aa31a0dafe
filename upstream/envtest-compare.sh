#!/usr/bin/env bash
# Runs operators' envtest suites twice each, unchanged: on envtest's real control plane
# (kube-apiserver and etcd of the upstream build as KUBEBUILDER_ASSETS) and on fake-apiserver
# standing in for them (`fake-apiserver --envtest-assets`: every envtest Environment starts its own
# fake server); prints the wall time and the Ginkgo result of each run.
#
# Usage: upstream/envtest-compare.sh NAME=PACKAGE_DIR:TEST_BINARY[:FOCUS] ...
#   PACKAGE_DIR  the suite's package folder in the operator's checkout (the binary runs there)
#   TEST_BINARY  built there with `go test -c -o TEST_BINARY .`
#   FOCUS        optional `-ginkgo.focus` regular expression (a part of a suite)
# Needs: `upstream/build.sh build` done, kubectl on PATH, `cargo build -p fake-apiserver`.
# The recipe for each suite (checkout, CRDs to prepare): docs/envtest.md.
set -uo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(dirname "$HERE")
FAKE=${FAKE_APISERVER:-$REPO/target/debug/fake-apiserver}
CACHE=$(bash "$HERE/build.sh" dir)
WORK=$(mktemp -d -t kproof-envtest-compare.XXXXXX)
REAL_ASSETS="$WORK/real-assets"
FAKE_ASSETS="$WORK/fake-assets"
mkdir -p "$REAL_ASSETS"
for b in etcd kube-apiserver; do
  [ -x "$CACHE/bin/$b" ] || { echo "missing $CACHE/bin/$b: run upstream/build.sh build" >&2; exit 2; }
  ln -s "$CACHE/bin/$b" "$REAL_ASSETS/$b"
done
ln -s "$(command -v kubectl)" "$REAL_ASSETS/kubectl" || { echo "kubectl is not on PATH" >&2; exit 2; }
[ -x "$FAKE" ] || { echo "missing $FAKE: run cargo build -p fake-apiserver" >&2; exit 2; }
"$FAKE" --envtest-assets "$FAKE_ASSETS" >/dev/null || exit 2

result() { sed 's/\x1b\[[0-9;]*m//g' "$1" | grep -aE 'Passed' | tail -1; }

for spec in "$@"; do
  name=${spec%%=*}; rest=${spec#*=}; dir=${rest%%:*}; rest=${rest#*:}; bin=${rest%%:*}
  focus=; [ "$rest" != "$bin" ] && focus=${rest#*:}
  args=(-test.timeout 30m); [ -n "$focus" ] && args+=("-ginkgo.focus=$focus")
  for mode in real fake; do
    log="$WORK/$name-$mode.log"
    assets=$REAL_ASSETS; [ "$mode" = fake ] && assets=$FAKE_ASSETS
    start=$(date +%s.%N)
    (cd "$dir" && KUBEBUILDER_ASSETS="$assets" "$bin" "${args[@]}" >"$log" 2>&1)
    end=$(date +%s.%N)
    printf '%-24s %-5s %8.1f s  %s\n' "$name" "$mode" "$(echo "$end - $start" | bc)" "$(result "$log")"
  done
done
echo "logs: $WORK"
