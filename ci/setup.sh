#!/usr/bin/env bash
# ci/setup.sh [PART...] installs what the build, the tests and the commands
# need on a fresh machine of this project's kind (Debian bookworm, Go 1.26,
# root). It is idempotent: what is already installed at the pinned version is
# left alone. Go-built tools go to .bin/ in the repository, versioned so that
# a pin change rebuilds them. Each make target asks only for the parts it
# uses (see the Makefile); `make run` needs none of them.
#
# Parts (default: all; several may be given):
#   apt        PostgreSQL, Prometheus and InfluxDB (Debian packages; root)
#              postgresql | prometheus | influxdb: one of them
#   tools      the pinned Go tools: staticcheck, actionlint (make lint),
#              controller-gen (make generate), versitygw (the object store)
#              staticcheck | actionlint | controller-gen | versitygw: one of them
#   cluster    the local control plane's binaries (aware cluster install):
#              about 10 minutes once on 2 cores
#   testbed    the Pulumi CLI and Kubernetes provider (aware testbed install):
#              about 9 minutes and 5 GB of memory once
#   all        every part above (make test, make setup)
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BIN="$ROOT/.bin"
mkdir -p "$BIN"

# Pinned versions (see docs/versions.md for what the module proxy refused).
STATICCHECK_VERSION=v0.8.2        # honnef.co/go/tools (staticcheck 2026.1.2)
VERSITYGW_VERSION=v1.8.0          # github.com/versity/versitygw, S3-compatible gateway (posix backend)
CONTROLLER_GEN_VERSION=v0.19.0    # sigs.k8s.io/controller-tools, the release for k8s.io/api v0.34
ACTIONLINT_VERSION=v1.7.12        # github.com/rhysd/actionlint, lints ci/workflows

log() { printf 'setup: %s\n' "$*" >&2; }

# apt_install PART...: the Debian packages among postgresql, prometheus and
# influxdb (the trajectory store's InfluxDB 1.6) that are not installed yet.
apt_install() {
	local apt_pkgs=() p
	for p in "$@"; do
		case $p in
		postgresql) ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || apt_pkgs+=(postgresql) ;;
		prometheus) command -v prometheus >/dev/null 2>&1 || apt_pkgs+=(prometheus) ;;
		influxdb) command -v influxd >/dev/null 2>&1 || apt_pkgs+=(influxdb) ;;
		esac
	done
	((${#apt_pkgs[@]})) || return 0
	if [ "$(id -u)" -ne 0 ]; then
		log "need root to apt-get install ${apt_pkgs[*]}"; exit 1
	fi
	log "apt-get install ${apt_pkgs[*]}"
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq
	apt-get install -y -qq --no-install-recommends "${apt_pkgs[@]}" >/dev/null
	# The Debian packages start system services; the tests run their own.
	for p in "${apt_pkgs[@]}"; do
		systemctl disable --now "$p" >/dev/null 2>&1 || true
		service "$p" stop >/dev/null 2>&1 || true
	done
}

# go_tool NAME: go install the pinned NAME as .bin/NAME, keyed by version.
go_tool() {
	local name=$1 pkg version
	case $name in
	staticcheck) pkg=honnef.co/go/tools/cmd/staticcheck version=$STATICCHECK_VERSION ;;
	versitygw) pkg=github.com/versity/versitygw/cmd/versitygw version=$VERSITYGW_VERSION ;;
	controller-gen) pkg=sigs.k8s.io/controller-tools/cmd/controller-gen version=$CONTROLLER_GEN_VERSION ;;
	actionlint) pkg=github.com/rhysd/actionlint/cmd/actionlint version=$ACTIONLINT_VERSION ;;
	esac
	local stamp="$BIN/.$name.version"
	if [ -x "$BIN/$name" ] && [ "$(cat "$stamp" 2>/dev/null)" = "$version" ]; then
		return
	fi
	log "go install $pkg@$version"
	GOBIN="$BIN" GOFLAGS=-buildvcs=false CGO_ENABLED=0 go install -trimpath "$pkg@$version"
	echo "$version" >"$stamp"
}

parts=("$@")
((${#parts[@]})) || parts=(all)
for part in "${parts[@]}"; do
	case $part in
	apt | postgresql | prometheus | influxdb | tools | staticcheck | versitygw | controller-gen | actionlint | cluster | testbed | all) ;;
	*) log "unknown part '$part' (want apt, postgresql, prometheus, influxdb, tools, staticcheck, versitygw, controller-gen, actionlint, cluster, testbed or all)"; exit 2 ;;
	esac
done
# all is every part, in this order.
expanded=()
for part in "${parts[@]}"; do
	if [ "$part" = all ]; then expanded+=(apt tools cluster testbed); else expanded+=("$part"); fi
done
parts=("${expanded[@]}")

for part in "${parts[@]}"; do
	case $part in
	apt) apt_install postgresql prometheus influxdb ;;
	postgresql | prometheus | influxdb) apt_install "$part" ;;
	tools) for t in staticcheck versitygw controller-gen actionlint; do go_tool "$t"; done ;;
	staticcheck | versitygw | controller-gen | actionlint) go_tool "$part" ;;
	# The local control plane's binaries (kube-apiserver, controller-manager,
	# scheduler, kubectl, etcd, kwok), built from the module proxy into a
	# versioned cache outside the repository: about 10 minutes once, then a check.
	cluster) (cd "$ROOT" && go run ./cmd/aware cluster install) ;;
	# The Pulumi CLI and Kubernetes provider plugin the testbed's Automation API
	# runs (get.pulumi.com and plugin downloads are out of reach): built from the
	# module proxy into a versioned cache, about 9 minutes and 5 GB of memory
	# once (the provider is the larger), then a check.
	testbed) (cd "$ROOT" && go run ./cmd/aware testbed install) ;;
	esac
done

log "ready (${parts[*]}): $(ls "$BIN" | tr '\n' ' ')"
