# AWARE-Go. `make help` lists the targets.
# Each target installs what it uses (ci/setup.sh PART..., idempotent): `make run`
# needs only Go; `make test` installs everything the tests need (ci/setup.sh all).
SHELL := /bin/bash
.DEFAULT_GOAL := help

GO        ?= go
BIN       := $(CURDIR)/.bin
AWARE     := $(BIN)/aware
PKGS      := ./...
# Tests that start servers share 2 cores: keep package parallelism low.
TEST_P    ?= 2
FUZZTIME  ?= 10s
# Fuzzing runs on Go 1.27.3 (fetched from the module proxy on first use):
# Go 1.26's fuzz coordinator can report its own -fuzztime deadline as a
# failure ("context deadline exceeded", no failing input) when a worker is
# mid-call at that instant on a busy machine (go.dev/issue/75804, fixed in 1.27).
FUZZGO    ?= GOTOOLCHAIN=go1.27.3 $(GO)

.PHONY: help
help: ## Show this help.
	@awk 'BEGIN {FS = ":.*## "} /^[a-zA-Z_-]+:.*## / {printf "  \033[36m%-12s\033[0m %s\n", $$1, $$2}' $(MAKEFILE_LIST)

.PHONY: setup
setup: ## Install everything any target needs (apt packages, pinned Go tools, control plane, Pulumi toolchain; about 45 minutes once on 2 cores); idempotent.
	@bash ci/setup.sh all

.PHONY: build
build: build-aware ## Build the aware CLI and the testbed driver into .bin/aware and .bin/aware-testbed.
	$(GO) build -trimpath -o $(BIN)/aware-testbed ./cmd/aware-testbed

.PHONY: build-aware
build-aware: ## Build the aware CLI alone into .bin/aware: all that run and the targets below use (aware testbed also needs the driver: make build).
	$(GO) build -trimpath -buildvcs=auto -o $(AWARE) ./cmd/aware

.PHONY: run
run: build-aware ## Main job on the embedded default: the four quick studies on the simulator (out/index.md, under 10 minutes).
	$(AWARE) study --quick --out out

.PHONY: baselines
baselines: build-aware ## Generate 1000 apps (HPA targets tuned per app) and run static/HPA/VPA/HPA+VPA on the simulator for a day.
	$(AWARE) run --out out/run

.PHONY: studies-full
studies-full: build-aware ## The four studies at the paper's scale (expected wall time printed first; shard with aware study --shard).
	$(AWARE) study --full --out out/full

.PHONY: test
test: setup ## Install everything the tests need (make setup), then lint and run unit and integration tests (race detector on).
	$(MAKE) lint
	$(GO) test -race -count=1 -p $(TEST_P) -timeout 40m $(PKGS)
# The RL library again without its AVX-512 kernels, as on other processors.
	$(GO) test -count=1 -tags purego ./controller/rl/...
# Every parser of outside input, fuzzed for a few seconds each.
	$(MAKE) fuzz FUZZTIME=4s

.PHONY: faults
faults: build-aware ## Fault-injection suite on the local control plane (100 MPAs, eight faults, about 15 minutes); writes its table into docs/reliability.md.
	@bash ci/setup.sh prometheus influxdb
	$(AWARE) cluster install
	$(AWARE) faults --doc docs/reliability.md --check

.PHONY: fuzz
fuzz: ## Run every fuzz target (each func Fuzz… of a _test.go file) for FUZZTIME each.
	@for f in $$(grep -rl --include='*_test.go' '^func Fuzz' . | sort); do \
	  pkg=./$$(dirname $${f#./}); \
	  for t in $$(grep -o '^func Fuzz[A-Za-z0-9_]*' $$f | cut -d' ' -f2); do \
	    echo "fuzz $$pkg $$t"; $(FUZZGO) test -run '^$$' -fuzz "^$$t$$" -fuzztime $(FUZZTIME) $$pkg || exit 1; \
	  done; \
	done

.PHONY: bench
bench: build-aware ## Print the per-segment, load-generator and simulator benchmark tables.
	@bash ci/setup.sh postgresql versitygw
	$(GO) test -run '^$$' -bench . -benchtime 20x ./workloads/segments/
	$(GO) test -run '^$$' -bench . -benchtime 2s ./workloads/sim/ ./controller/recommender/... ./controller/rl/... ./controller/meta/
	$(AWARE) loadgen bench
	$(AWARE) bench rl

.PHONY: compare
compare: build-aware ## Train DDPG, PPO and PPO-continuous on 10 test-split apps; table against HPA+VPA (about 10 minutes).
	$(AWARE) compare --out out/compare

.PHONY: validate
validate: build-aware ## Run 8 generated apps for real (each case three times) and on the simulator; print the error table (about 35 minutes).
	@bash ci/setup.sh postgresql versitygw
	$(AWARE) sim validate --repeats 3 --out out/validate

.PHONY: calibrate
calibrate: build-aware ## Re-measure the segments and rewrite workloads/calibration/profile.json.
	@bash ci/setup.sh postgresql versitygw
	$(AWARE) workload calibrate --out workloads/calibration/profile.json
	@echo "the pool's golden files follow the profile: go test ./generator -update, then review the diff"

.PHONY: cluster-up
cluster-up: build-aware ## Start the local control plane (builds the pinned Kubernetes, etcd and kwok once, ~10 min); prints KUBECONFIG.
	$(AWARE) cluster up --dir out/cluster

.PHONY: cluster-down
cluster-down: build-aware ## Stop the local control plane.
	$(AWARE) cluster down --dir out/cluster

.PHONY: lint
lint: ## gofmt, go mod tidy check, go vet, staticcheck and actionlint (pinned).
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	  if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) mod tidy -diff
	$(GO) vet $(PKGS)
	$(GO) vet -tags purego ./controller/rl/...
	GOARCH=arm64 $(GO) vet ./controller/rl/...
	@bash ci/setup.sh staticcheck actionlint
	$(BIN)/staticcheck $(PKGS)
	$(BIN)/actionlint ci/workflows/*.yml

.PHONY: generate
generate: ## Regenerate generated code: go generate, then the MPA API's DeepCopy and CRD and the ClusterRoles of the controller, of `aware env serve --cluster` and of `aware agents` (controller-gen).
	$(GO) generate $(PKGS)
	@bash ci/setup.sh controller-gen
	$(BIN)/controller-gen object paths=./controller/api/...
	$(BIN)/controller-gen crd:allowDangerousTypes=true paths=./controller/api/... output:crd:artifacts:config=controller/api/crd
	$(BIN)/controller-gen rbac:roleName=aware-controller 'paths={./controller/autoscaler/...,./controller/manager/...,./controller/admission/...}' output:rbac:dir=controller/deploy/rbac
	$(BIN)/controller-gen rbac:roleName=aware-env paths=./controller/mpaenv/... output:rbac:dir=controller/deploy/env-rbac
	$(BIN)/controller-gen rbac:roleName=aware-agents paths=./controller/agents/... output:rbac:dir=controller/deploy/agents-rbac

.PHONY: clean
clean: ## Remove built binaries (keeps pinned tools).
	rm -f $(AWARE)
