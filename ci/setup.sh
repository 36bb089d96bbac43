#!/usr/bin/env bash
# ci/setup.sh installs everything the tests need on a fresh machine of this
# project's kind (Debian bookworm, Go 1.26, root). It is idempotent: what is
# already installed at the pinned version is left alone. Go-built tools go to
# .bin/ in the repository, versioned so that a pin change rebuilds them.
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

# Debian packages: PostgreSQL server (initdb/pg_ctl/postgres), Prometheus and
# InfluxDB 1.6 (influxd, the trajectory store's database).
apt_pkgs=()
ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || apt_pkgs+=(postgresql)
command -v prometheus >/dev/null 2>&1 || apt_pkgs+=(prometheus)
command -v influxd >/dev/null 2>&1 || apt_pkgs+=(influxdb)
if ((${#apt_pkgs[@]})); then
	if [ "$(id -u)" -ne 0 ]; then
		log "need root to apt-get install ${apt_pkgs[*]}"; exit 1
	fi
	log "apt-get install ${apt_pkgs[*]}"
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq
	apt-get install -y -qq --no-install-recommends "${apt_pkgs[@]}" >/dev/null
	# The Debian packages start system services; the tests run their own.
	systemctl disable --now prometheus postgresql influxdb >/dev/null 2>&1 || true
	service prometheus stop >/dev/null 2>&1 || true
	service postgresql stop >/dev/null 2>&1 || true
	service influxdb stop >/dev/null 2>&1 || true
fi

# go_tool NAME PKG VERSION: go install PKG@VERSION as .bin/NAME, keyed by version.
go_tool() {
	local name=$1 pkg=$2 version=$3
	local stamp="$BIN/.$name.version"
	if [ -x "$BIN/$name" ] && [ "$(cat "$stamp" 2>/dev/null)" = "$version" ]; then
		return
	fi
	log "go install $pkg@$version"
	GOBIN="$BIN" GOFLAGS=-buildvcs=false CGO_ENABLED=0 go install -trimpath "$pkg@$version"
	echo "$version" >"$stamp"
}

go_tool staticcheck honnef.co/go/tools/cmd/staticcheck "$STATICCHECK_VERSION"
go_tool versitygw github.com/versity/versitygw/cmd/versitygw "$VERSITYGW_VERSION"
go_tool controller-gen sigs.k8s.io/controller-tools/cmd/controller-gen "$CONTROLLER_GEN_VERSION"
go_tool actionlint github.com/rhysd/actionlint/cmd/actionlint "$ACTIONLINT_VERSION"

# The local control plane's binaries (kube-apiserver, controller-manager,
# scheduler, kubectl, etcd, kwok), built from the module proxy into a
# versioned cache outside the repository: about 10 minutes once, then a check.
(cd "$ROOT" && go run ./cmd/aware cluster install)

# The Pulumi CLI and Kubernetes provider plugin the testbed's Automation API
# runs (get.pulumi.com and plugin downloads are out of reach): built from the
# module proxy into a versioned cache, about 9 minutes and 5 GB of memory
# once (the provider is the larger), then a check.
(cd "$ROOT" && go run ./cmd/aware testbed install)

log "ready: $(ls "$BIN" | tr '\n' ' ')"
