#!/usr/bin/env bash
# Builds the upstream components of kproof's "upstream" backend from their Go modules
# (through the Go module proxy) into a cache directory keyed by the pins:
#
#   ${KPROOF_UPSTREAM_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/kproof/upstream}/<key>/
#     bin/        etcd kube-apiserver kube-controller-manager kube-scheduler kueue ray-operator
#     tools/      kustomize (only used here, to render Kueue's config/default)
#     manifests/  kuberay/crd/*.yaml  kueue/default.yaml  gateway-api/standard/*.yaml
#     versions.json   component -> version actually built, go version, build seconds
#     logs/       one build log per component
#
# <key> = sha256 of every go.mod/go.sum/*.go under upstream/, the build flags below and
# `go version`. A component already built for this key is skipped, so a second run takes seconds.
#
# Usage: upstream/build.sh [build|dir|check]
#   build (default)  build what is missing, print per-component status
#   dir              print the cache directory for the current pins (no build)
#   check            exit 0 if that directory is complete, 1 otherwise (no build)
#
# Exit status of `build`:
#   0  everything built (KubeRay may be the fallback version: see versions.json "fallback")
#   2  etcd and the Kubernetes control plane built, but Kueue, the KubeRay operator or a
#      manifest set failed (the message names it; a rerun retries only what is missing)
#   1  etcd or a Kubernetes control-plane binary failed, or no Go toolchain
#
# Builds run one at a time (a 2-core machine; linking kube-apiserver is the memory peak).
# Environment: GOPROXY/GOSUMDB/GOMODCACHE/GOCACHE as usual; GOTOOLCHAIN is forced to local.
set -uo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
MODE=${1:-build}

# The one place the recipe is defined: changing any of these changes the key.
RECIPE_VERSION=2
export GOTOOLCHAIN=local
export CGO_ENABLED=0
export GOFLAGS="-mod=readonly -buildvcs=false"
K8S_TAGS="selinux,notest"          # as hack/lib/golang.sh
COMMON_BUILD_FLAGS="-trimpath"
COMMON_LDFLAGS="-s -w"
KUBERAY_WANTED_DIR=kuberay         # requires ray-operator v1.7.0
KUBERAY_FALLBACK_DIR=kuberay-v1.6.2

log() { printf '[upstream %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
die() { log "ERROR: $*"; exit 1; }

command -v go >/dev/null 2>&1 || die "no Go toolchain on PATH (need go >= 1.26.0)"
GO_VERSION=$(go env GOVERSION) || die "go env failed"
GOOS_GOARCH="$(go env GOOS)/$(go env GOARCH)"

cache_root() {
  if [ -n "${KPROOF_UPSTREAM_CACHE:-}" ]; then
    printf '%s' "$KPROOF_UPSTREAM_CACHE"
  else
    printf '%s' "${XDG_CACHE_HOME:-$HOME/.cache}/kproof/upstream"
  fi
}

compute_key() {
  {
    printf 'recipe=%s\ngo=%s\nplatform=%s\ncgo=%s\ngoflags=%s\nk8s_tags=%s\nbuild=%s\nldflags=%s\n' \
      "$RECIPE_VERSION" "$GO_VERSION" "$GOOS_GOARCH" "$CGO_ENABLED" "$GOFLAGS" "$K8S_TAGS" \
      "$COMMON_BUILD_FLAGS" "$COMMON_LDFLAGS"
    (cd "$HERE" && find . -type f \( -name go.mod -o -name go.sum -o -name '*.go' \) | LC_ALL=C sort |
      while read -r f; do printf '== %s\n' "$f"; cat "$f"; done)
  } | sha256sum | cut -c1-16
}

KEY=$(compute_key)
OUT="$(cache_root)/$KEY"

case "$MODE" in
  dir) printf '%s\n' "$OUT"; exit 0 ;;
  check) [ -f "$OUT/complete" ] && exit 0 || exit 1 ;;
  build) ;;
  *) die "unknown mode '$MODE' (build|dir|check)" ;;
esac

mkdir -p "$OUT/bin" "$OUT/tools" "$OUT/manifests" "$OUT/logs" "$OUT/status" || die "cannot create $OUT"
exec 9>"$OUT/.lock"
if ! flock -n 9; then
  log "another build.sh holds $OUT/.lock; waiting"
  flock 9
fi

# JSON string escaping (no external tools).
json_str() {
  local s=$1
  s=${s//\\/\\\\}; s=${s//\"/\\\"}; s=${s//$'\n'/\\n}; s=${s//$'\t'/\\t}; s=${s//$'\r'/}
  printf '"%s"' "$s"
}

now() { date +%s.%N; }
elapsed() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.1f", b - a }'; }

# module_field <dir> <module> <go-template>
module_field() { (cd "$HERE/$1" && go list -m -f "$3" "$2"); }

# Origin commit of a module version as recorded by the proxy's .info (may be empty).
module_commit() {
  local info
  info=$( (cd "$HERE/$1" && go mod download -json "$2" 2>/dev/null) |
    sed -n 's/^[[:space:]]*"Info": "\(.*\)",*$/\1/p' | head -n1)
  [ -n "$info" ] && [ -f "$info" ] && sed -n 's/.*"Hash":"\([0-9a-f]*\)".*/\1/p' "$info" | head -n1
  return 0
}

TIME_BIN=""
[ -x /usr/bin/time ] && TIME_BIN=/usr/bin/time

# status/<component> holds: status version wanted seconds max_rss_kb, then a note line.
write_status() { # component status version wanted seconds rss note
  printf '%s %s %s %s %s\n%s\n' "$2" "$3" "$4" "$5" "$6" "$7" >"$OUT/status/$1"
}
status_field() { [ -f "$OUT/status/$1" ] && head -n1 "$OUT/status/$1" | cut -d' ' -f"$2"; }

# go_build <component> <module dir> <package> <output> [extra go build args...]
go_build() {
  local comp=$1 dir=$2 pkg=$3 out=$4; shift 4
  local logf="$OUT/logs/$comp.log" rssf="$OUT/logs/$comp.rss" t0 t1 rc
  t0=$(now)
  log "building $comp ($pkg) ..."
  if [ -n "$TIME_BIN" ]; then
    (cd "$HERE/$dir" && "$TIME_BIN" -f '%M' -o "$rssf" go build $COMMON_BUILD_FLAGS "$@" -o "$out.tmp" "$pkg") >"$logf" 2>&1
  else
    (cd "$HERE/$dir" && go build $COMMON_BUILD_FLAGS "$@" -o "$out.tmp" "$pkg") >"$logf" 2>&1
  fi
  rc=$?
  t1=$(now)
  LAST_SECONDS=$(elapsed "$t0" "$t1")
  LAST_RSS=$( [ -f "$rssf" ] && tail -n1 "$rssf" || echo 0)
  if [ $rc -ne 0 ]; then
    rm -f "$out.tmp"
    log "FAILED $comp after ${LAST_SECONDS}s (log: $logf):"
    sed 's/^/    /' "$logf" | tail -n 15 >&2
    return 1
  fi
  mv -f "$out.tmp" "$out"
  log "built $comp in ${LAST_SECONDS}s ($(du -h "$out" | cut -f1), peak RSS $((LAST_RSS / 1024)) MiB)"
}

CP_FAILED=()
OPT_FAILED=()

# ---- etcd -------------------------------------------------------------------------------
build_etcd() {
  local v; v=$(module_field etcd go.etcd.io/etcd/server/v3 '{{.Version}}') || return 1
  if go_build etcd etcd . "$OUT/bin/etcd" -ldflags "$COMMON_LDFLAGS"; then
    write_status etcd built "$v" "$v" "$LAST_SECONDS" "$LAST_RSS" ""
  else
    return 1
  fi
}

# ---- Kubernetes -------------------------------------------------------------------------
k8s_ldflags() {
  local v t major minor pkg flags
  v=$(module_field kubernetes k8s.io/kubernetes '{{.Version}}') || return 1
  t=$(module_field kubernetes k8s.io/kubernetes '{{.Time.UTC.Format "2006-01-02T15:04:05Z"}}') || return 1
  major=${v#v}; major=${major%%.*}
  minor=${v#v*.}; minor=${minor%%.*}
  flags="$COMMON_LDFLAGS"
  # hack/lib/version.sh sets these on both packages. buildDate is the tag's commit time (from the
  # proxy), so the binaries are reproducible; gitCommit is not published by the proxy for this
  # module, so it stays empty rather than "$Format:%H$".
  for pkg in k8s.io/client-go/pkg/version k8s.io/component-base/version; do
    flags+=" -X $pkg.gitVersion=$v -X $pkg.gitMajor=$major -X $pkg.gitMinor=$minor"
    flags+=" -X $pkg.gitTreeState=clean -X $pkg.buildDate=$t -X $pkg.gitCommit="
  done
  K8S_VERSION=$v
  K8S_LDFLAGS=$flags
}

build_k8s() { # component
  local comp=$1
  if go_build "$comp" kubernetes "k8s.io/kubernetes/cmd/$comp" "$OUT/bin/$comp" -tags "$K8S_TAGS" -ldflags "$K8S_LDFLAGS"; then
    write_status "$comp" built "$K8S_VERSION" "$K8S_VERSION" "$LAST_SECONDS" "$LAST_RSS" ""
  else
    return 1
  fi
}

# ---- Kueue ------------------------------------------------------------------------------
build_kueue() {
  local v t c
  v=$(module_field kueue sigs.k8s.io/kueue '{{.Version}}') || return 1
  t=$(module_field kueue sigs.k8s.io/kueue '{{.Time.UTC.Format "2006-01-02T15:04:05Z"}}') || return 1
  c=$(module_commit kueue sigs.k8s.io/kueue)
  # Kueue's Makefile: -X $(version_pkg).GitVersion/GitCommit/BuildDate.
  local p=sigs.k8s.io/kueue/pkg/version
  if go_build kueue kueue sigs.k8s.io/kueue/cmd/kueue "$OUT/bin/kueue" \
      -ldflags "$COMMON_LDFLAGS -X $p.GitVersion=$v -X $p.GitCommit=$c -X $p.BuildDate=$t"; then
    write_status kueue built "$v" "$v" "$LAST_SECONDS" "$LAST_RSS" ""
  else
    return 1
  fi
}

# ---- KubeRay ----------------------------------------------------------------------------
kuberay_ldflags() { # module dir
  local t c
  t=$(module_field "$1" github.com/ray-project/kuberay/ray-operator '{{.Time.UTC.Format "2006-01-02T15:04:05Z"}}' 2>/dev/null)
  c=$(module_commit "$1" github.com/ray-project/kuberay/ray-operator)
  # As ray-operator/Makefile `build` (main._buildTime_/_commitId_; KubeRay's version itself is the
  # constant utils.KUBERAY_VERSION, shown in the ray.io/kuberay-version label and user agent).
  printf '%s' "$COMMON_LDFLAGS -X main._buildTime_=$t -X main._commitId_=$c"
}

# Prints the error text if the wanted KubeRay module zip cannot be downloaded, nothing if it can.
kuberay_wanted_error() {
  local out
  out=$(cd "$HERE/$KUBERAY_WANTED_DIR" && go mod download -json github.com/ray-project/kuberay/ray-operator 2>&1)
  if printf '%s' "$out" | grep -q '"Error"'; then
    printf '%s' "$out" | sed -n 's/^[[:space:]]*"Error": "\(.*\)",*$/\1/p' | sed 's/\\n/\n/g; s/\\t/\t/g; s/\\u003e/>/g; s/\\u003c/</g'
  elif ! printf '%s' "$out" | grep -q '"Dir"'; then
    printf '%s' "$out"
  fi
}

build_kuberay() {
  local wanted dir v err note=""
  wanted=$(module_field "$KUBERAY_WANTED_DIR" github.com/ray-project/kuberay/ray-operator '{{.Version}}') || return 1
  dir=$KUBERAY_WANTED_DIR
  err=$(kuberay_wanted_error)
  if [ -n "$err" ]; then
    log "################################################################################"
    log "KubeRay ray-operator $wanted (the pinned version) cannot be downloaded:"
    printf '%s\n' "$err" | sed 's/^/    /' >&2
    dir=$KUBERAY_FALLBACK_DIR
    v=$(module_field "$dir" github.com/ray-project/kuberay/ray-operator '{{.Version}}') || return 1
    log "FALLING BACK to ray-operator $v ($KUBERAY_FALLBACK_DIR/): every report must say so."
    log "################################################################################"
    note="fallback: $wanted not downloadable: $err"
  else
    v=$wanted
  fi
  if go_build ray-operator "$dir" github.com/ray-project/kuberay/ray-operator "$OUT/bin/ray-operator" \
      -ldflags "$(kuberay_ldflags "$dir")"; then
    write_status ray-operator built "$v" "$wanted" "$LAST_SECONDS" "$LAST_RSS" "$note"
    printf '%s\n' "$dir" >"$OUT/status/ray-operator.moddir"
  else
    return 1
  fi
}

# ---- build tools and manifests ----------------------------------------------------------
build_kustomize() {
  local v; v=$(module_field kustomize sigs.k8s.io/kustomize/kustomize/v5 '{{.Version}}') || return 1
  if go_build kustomize kustomize sigs.k8s.io/kustomize/kustomize/v5 "$OUT/tools/kustomize" -ldflags "$COMMON_LDFLAGS"; then
    write_status kustomize built "$v" "$v" "$LAST_SECONDS" "$LAST_RSS" ""
  else
    return 1
  fi
}

copy_yaml() { # from-dir to-dir
  mkdir -p "$2" && cp "$1"/*.yaml "$2"/ && chmod u+w "$2"/*.yaml
}

manifests_kuberay() {
  local dir v src t0; t0=$(now)
  dir=$(cat "$OUT/status/ray-operator.moddir" 2>/dev/null) || return 1
  v=$(status_field ray-operator 2)
  src=$(module_field "$dir" github.com/ray-project/kuberay/ray-operator '{{.Dir}}') || return 1
  rm -rf "$OUT/manifests/kuberay" && copy_yaml "$src/config/crd/bases" "$OUT/manifests/kuberay/crd" || return 1
  write_status manifests-kuberay built "$v" "$v" "$(elapsed "$t0" "$(now)")" 0 "$src/config/crd/bases"
  log "manifests: KubeRay $v CRDs -> manifests/kuberay/crd/ ($(ls "$OUT/manifests/kuberay/crd" | wc -l) files)"
}

manifests_kueue() {
  local v src t0; t0=$(now)
  v=$(module_field kueue sigs.k8s.io/kueue '{{.Version}}') || return 1
  src=$(module_field kueue sigs.k8s.io/kueue '{{.Dir}}') || return 1
  mkdir -p "$OUT/manifests/kueue" || return 1
  if ! "$OUT/tools/kustomize" build "$src/config/default" >"$OUT/manifests/kueue/default.yaml.tmp" 2>"$OUT/logs/manifests-kueue.log"; then
    log "FAILED kustomize build $src/config/default:"; tail -n 15 "$OUT/logs/manifests-kueue.log" >&2
    return 1
  fi
  mv -f "$OUT/manifests/kueue/default.yaml.tmp" "$OUT/manifests/kueue/default.yaml"
  write_status manifests-kueue built "$v" "$v" "$(elapsed "$t0" "$(now)")" 0 "$src/config/default"
  log "manifests: Kueue $v config/default rendered -> manifests/kueue/default.yaml ($(grep -c '^kind:' "$OUT/manifests/kueue/default.yaml") objects)"
}

manifests_gateway() {
  local v src t0; t0=$(now)
  v=$(module_field gateway-api sigs.k8s.io/gateway-api '{{.Version}}') || return 1
  (cd "$HERE/gateway-api" && go mod download sigs.k8s.io/gateway-api) || return 1
  src=$(module_field gateway-api sigs.k8s.io/gateway-api '{{.Dir}}') || return 1
  rm -rf "$OUT/manifests/gateway-api" && copy_yaml "$src/config/crd/standard" "$OUT/manifests/gateway-api/standard" || return 1
  write_status manifests-gateway-api built "$v" "$v" "$(elapsed "$t0" "$(now)")" 0 "$src/config/crd/standard"
  log "manifests: Gateway API $v standard CRDs -> manifests/gateway-api/standard/"
}

# ---- driver -----------------------------------------------------------------------------
done_already() { [ "$(status_field "$1" 1)" = built ] && { [ "$2" = "" ] || [ -e "$2" ]; }; }

step() { # component required(cp|opt) artefact function [args]
  local comp=$1 kind=$2 artefact=$3; shift 3
  if done_already "$comp" "$artefact"; then
    log "$comp: up to date ($(status_field "$comp" 2))"
    return 0
  fi
  rm -f "$OUT/status/$comp"
  if ! "$@"; then
    log "component $comp: FAILED"
    if [ "$kind" = cp ]; then CP_FAILED+=("$comp"); else OPT_FAILED+=("$comp"); fi
    return 1
  fi
}

T_START=$(now)
log "go: $GO_VERSION $GOOS_GOARCH; pins key $KEY; output $OUT"

# A KubeRay fallback build is retried once the wanted version becomes downloadable.
if [ "$(status_field ray-operator 2)" != "" ] && [ "$(status_field ray-operator 2)" != "$(status_field ray-operator 3)" ]; then
  if [ -z "$(kuberay_wanted_error)" ]; then
    log "ray-operator $(status_field ray-operator 3) is now downloadable: rebuilding it instead of the fallback"
    rm -f "$OUT/status/ray-operator" "$OUT/status/manifests-kuberay" "$OUT/complete"
  fi
fi

if [ -f "$OUT/complete" ]; then
  log "all components up to date in $OUT ($(elapsed "$T_START" "$(now)")s)"
else
  step etcd cp "$OUT/bin/etcd" build_etcd
  if ! done_already kube-apiserver "$OUT/bin/kube-apiserver" || ! done_already kube-controller-manager "$OUT/bin/kube-controller-manager" ||
     ! done_already kube-scheduler "$OUT/bin/kube-scheduler"; then
    k8s_ldflags || CP_FAILED+=("kubernetes-version")
  fi
  for c in kube-apiserver kube-controller-manager kube-scheduler; do
    step "$c" cp "$OUT/bin/$c" build_k8s "$c"
  done
  step kueue opt "$OUT/bin/kueue" build_kueue
  step ray-operator opt "$OUT/bin/ray-operator" build_kuberay
  step kustomize opt "$OUT/tools/kustomize" build_kustomize
  if done_already ray-operator "$OUT/bin/ray-operator"; then
    step manifests-kuberay opt "$OUT/manifests/kuberay/crd" manifests_kuberay
  fi
  if done_already kustomize "$OUT/tools/kustomize"; then
    step manifests-kueue opt "$OUT/manifests/kueue/default.yaml" manifests_kueue
  else
    OPT_FAILED+=("manifests-kueue(needs kustomize)")
  fi
  step manifests-gateway-api opt "$OUT/manifests/gateway-api/standard" manifests_gateway
fi

# versions.json (rewritten on every run from status/)
{
  printf '{\n  "key": %s,\n  "go": %s,\n  "platform": %s,\n  "components": {' \
    "$(json_str "$KEY")" "$(json_str "$GO_VERSION")" "$(json_str "$GOOS_GOARCH")"
  sep=""
  for c in etcd kube-apiserver kube-controller-manager kube-scheduler kueue ray-operator kustomize \
           manifests-kuberay manifests-kueue manifests-gateway-api; do
    f="$OUT/status/$c"
    if [ -f "$f" ]; then
      read -r st ver wanted secs rss <"$f"
      note=$(sed -n '2,$p' "$f")
    else
      st=missing ver="" wanted="" secs=0 rss=0 note="not built"
    fi
    fb=false; [ -n "$ver" ] && [ "$ver" != "$wanted" ] && fb=true
    printf '%s\n    %s: {"status": %s, "version": %s, "wanted": %s, "fallback": %s, "build_seconds": %s, "max_rss_kb": %s, "note": %s}' \
      "$sep" "$(json_str "$c")" "$(json_str "$st")" "$(json_str "$ver")" "$(json_str "$wanted")" "$fb" \
      "${secs:-0}" "${rss:-0}" "$(json_str "$note")"
    sep=","
  done
  printf '\n  }\n}\n'
} >"$OUT/versions.json.tmp" && mv -f "$OUT/versions.json.tmp" "$OUT/versions.json"

log "summary ($OUT):"
for c in etcd kube-apiserver kube-controller-manager kube-scheduler kueue ray-operator kustomize \
         manifests-kuberay manifests-kueue manifests-gateway-api; do
  if [ -f "$OUT/status/$c" ]; then
    read -r st ver wanted secs rss <"$OUT/status/$c"
    extra=""; [ "$ver" != "$wanted" ] && extra="  (FALLBACK: wanted $wanted)"
    printf '    %-24s %-8s %-10s %7ss%s\n' "$c" "$st" "$ver" "$secs" "$extra" >&2
  else
    printf '    %-24s FAILED\n' "$c" >&2
  fi
done
log "total $(elapsed "$T_START" "$(now)")s"

if [ ${#CP_FAILED[@]} -gt 0 ]; then
  log "ERROR: control plane incomplete: ${CP_FAILED[*]} failed (see $OUT/logs/)"
  exit 1
fi
if [ ${#OPT_FAILED[@]} -gt 0 ]; then
  log "WARNING: control plane built, but these failed: ${OPT_FAILED[*]} (see $OUT/logs/)"
  exit 2
fi
touch "$OUT/complete"
exit 0
