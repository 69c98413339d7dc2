# cnat: at(1) for Kubernetes.
#
# The two commands a newcomer needs: `make run` (a local cluster, cnat on it,
# a sample At) and `make test` (everything CI runs). `make help` lists the rest.

SHELL := /usr/bin/env bash -o pipefail
.SHELLFLAGS := -ec
.DEFAULT_GOAL := help

# Tools are built from source into bin/ by `make tools` (hack/tools.sh).
BIN := $(CURDIR)/bin

# The Kubernetes the local cluster runs (make cluster, e2e, e2e-real, chaos,
# run...): control plane, kubectl and the real node's kubelet, built from
# the tools module under hack/tools/ that pins it (hack/lib/kube-version.sh).
# Default: hack/tools/kubernetes's pin, the newest minor cnat is tested on;
# KUBE_OLDEST: the oldest (make test-oldest). Any other than the default is
# built into bin/k8s/<version>/, never over the default's binaries.
KUBE_DEFAULT := $(shell sed -n 's|^require k8s.io/kubernetes \(v[^ ]*\)$$|\1|p' hack/tools/kubernetes/go.mod)
KUBE_OLDEST := $(shell sed -n 's|^require k8s.io/kubernetes \(v[^ ]*\)$$|\1|p' hack/tools/kubernetes-v1.32/go.mod)
KUBE_VERSION ?= $(KUBE_DEFAULT)
export KUBE_VERSION
KUBE_BIN := $(if $(filter $(KUBE_DEFAULT),$(KUBE_VERSION)),$(BIN),$(BIN)/k8s/$(KUBE_VERSION))
export PATH := $(KUBE_BIN):$(BIN):$(PATH)
CONTROLLER_GEN := go tool controller-gen

# The harness (bench, chaos, upgrade, release and image tools: hack/go.mod) is
# a Go module of its own, so that what only it imports stays out of go.mod.
# Its go commands run in hack/ (GOWORK=off: its go.mod decides); its
# commands run from the repository root through hack/harness.sh.
HARNESS_GO := GOWORK=off go -C hack

# The embedded local cluster's kubeconfig (`make cluster`).
LOCAL_KUBECONFIG := $(CURDIR)/.local/kubeconfig

# Where the integration tests find kube-apiserver, etcd and kubectl.
export KUBEBUILDER_ASSETS := $(BIN)

CRD_DIR := kustomize/base/crd/bases
RBAC_DIR := kustomize/base/rbac
WEBHOOK_DIR := kustomize/base/webhook

##@ General

.PHONY: help
help: ## Show this help.
	@awk 'BEGIN {FS = ":.*##"; printf "Usage: make \033[36m<target>\033[0m\n"} /^[a-zA-Z_0-9-]+:.*?##/ { printf "  \033[36m%-18s\033[0m %s\n", $$1, $$2 } /^##@/ { printf "\n\033[1m%s\033[0m\n", substr($$0, 5) } ' $(MAKEFILE_LIST)

##@ Development

.PHONY: manifests
manifests: ## Generate the CRD, RBAC and webhook manifests from the API types and markers.
	$(CONTROLLER_GEN) crd:generateEmbeddedObjectMeta=true paths=./api/... output:crd:artifacts:config=$(CRD_DIR)
	hack/harness.sh crd-trim $(CRD_DIR)/*.yaml
	$(CONTROLLER_GEN) rbac:roleName=cnat-manager-role paths=./internal/... paths=./cmd/... output:rbac:artifacts:config=$(RBAC_DIR)
	$(CONTROLLER_GEN) webhook paths=./internal/webhook/... output:webhook:artifacts:config=$(WEBHOOK_DIR)

.PHONY: generate
generate: ## Generate deepcopy functions and apply configurations.
	$(CONTROLLER_GEN) object paths=./api/...
	$(CONTROLLER_GEN) applyconfiguration paths=./api/...

.PHONY: fmt
fmt: ## Format the Go code.
	gofmt -w $$(git ls-files '*.go')

.PHONY: vet
vet: ## Run go vet on the product and the harness (hack/go.mod).
	go vet ./...
	$(HARNESS_GO) vet ./...

.PHONY: lint
lint: ## Run golangci-lint (.golangci.yml), make deadcode, kube-api-linter on the API types and kube-score on every overlay.
	hack/tools.sh golangci-lint >/dev/null
	$(BIN)/golangci-lint run ./...
	cd hack && GOWORK=off $(BIN)/golangci-lint run ./...
	$(MAKE) --no-print-directory deadcode
	$(MAKE) --no-print-directory api-lint
	$(MAKE) --no-print-directory kube-score

# The Kubernetes API linter (kube-api-linter, a golangci-lint module) on the
# API types of both versions; its configuration, with the deliberate
# exceptions and their reasons, is hack/kube-api-linter.yml.
.PHONY: api-lint
api-lint: ## Lint the API types with kube-api-linter (exceptions: hack/kube-api-linter.yml).
	hack/tools.sh golangci-lint-kube-api-linter >/dev/null
	$(BIN)/golangci-lint-kube-api-linter run -c hack/kube-api-linter.yml ./api/v1beta1/... ./api/v1alpha1/...

# kube-score on every overlay as cnatctl renders it, warnings included; the
# deliberate exceptions and their reasons are in hack/kube-score.sh.
.PHONY: kube-score
kube-score: ## Score the manifests of every overlay with kube-score (exceptions: hack/kube-score.sh).
	hack/kube-score.sh

# golangci-lint's unused does not report an exported function nothing calls,
# or one only tests call; deadcode (a tool of go.mod and of hack/go.mod) does,
# from the mains (cmd/*; in the harness's module hack/*) and, with -test,
# from the tests too. Two runs in each module:
#   1. with -test: a function not even a test calls is dead everywhere,
#      test/testenv included;
#   2. without: a function only tests call is an API nothing uses (delete it
#      with its tests) or test support (move it into a _test.go file or
#      test/testenv, the one package allowed here: it exists for tests).
# Generated code (api/applyconfiguration, zz_generated.*) is skipped, as
# deadcode does by default: controller-gen writes what it writes.
DEADCODE := go tool deadcode -tags e2e
DEADCODE_TEST_ONLY_ALLOWED := ^test/testenv/

.PHONY: deadcode
deadcode: ## Fail on functions nothing calls, or only tests call (outside test/testenv).
	@dead=$$($(DEADCODE) -test ./...); \
	test -z "$$dead" || { echo "Functions nothing calls, not even a test: delete them"; echo "$$dead"; exit 1; }
	@dead=$$($(DEADCODE) ./... | { grep -Ev '$(DEADCODE_TEST_ONLY_ALLOWED)' || true; }); \
	test -z "$$dead" || { echo "Functions only tests call: delete them with their tests, or move test support into a _test.go file or test/testenv"; echo "$$dead"; exit 1; }
	@dead=$$(cd hack && GOWORK=off $(DEADCODE) -test ./...); \
	test -z "$$dead" || { echo "Functions of the harness (hack/go.mod) nothing calls, not even a test: delete them"; echo "$$dead"; exit 1; }
	@dead=$$(cd hack && GOWORK=off $(DEADCODE) ./...); \
	test -z "$$dead" || { echo "Functions of the harness (hack/go.mod) only tests call: delete them with their tests"; echo "$$dead"; exit 1; }

# The Grafana dashboard of kustomize/components/monitoring, generated with
# the Grafana Foundation SDK by hack/monitoring (a module of its own, so
# that neither the SDK nor the Prometheus parser its tests use enter
# go.mod).
.PHONY: dashboard
dashboard: ## Generate the Grafana dashboard (kustomize/components/monitoring/dashboard.json) from hack/monitoring.
	cd hack/monitoring && GOWORK=off go run . -o $(CURDIR)/kustomize/components/monitoring/dashboard.json

.PHONY: verify
verify: manifests generate dashboard ## Fail when generated files are stale, the code is not gofmt-clean, workflows or kind-config.yaml are wrong, an overlay's image is not pinned, or the monitoring component's pieces disagree.
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || { echo "gofmt needed on:"; gofmt -l $$(git ls-files '*.go'); exit 1; }
	@git diff --exit-code -- api kustomize || { echo "Generated files are stale: run 'make manifests generate' and commit the result"; exit 1; }
	@test -z "$$(git status --porcelain --untracked-files=all -- api kustomize)" || { echo "Generated files are not committed:"; git status --porcelain -- api kustomize; exit 1; }
	go mod tidy -diff
	$(HARNESS_GO) mod tidy -diff
	go vet ./...
	$(HARNESS_GO) vet ./...
	hack/tools.sh actionlint >/dev/null
	$(BIN)/actionlint .github/workflows/*.yaml
	go test ./e2e/ -run '^(TestMonitoringComponent|TestMonitoringOnlyWhereAsked)$$' -count=1
	$(HARNESS_GO) test ./verify -count=1

##@ Test

.PHONY: test
test: verify lint test-unit test-monitoring test-integration e2e chaos e2e-real ## Everything CI runs (make chaos at the small size).

# make test runs the chaos scenarios at the small size.
test: CHAOS_SIZE = small

.PHONY: test-unit
test-unit: ## Unit tests: pure logic, no API server; a short fuzz run of both conversion round trips and of At validation.
	go test ./api/... ./internal/scheduler/... ./internal/lifecycle/... ./internal/atpod/... ./internal/controller/atstatus/... ./internal/atcache/... ./internal/certs/...
	$(HARNESS_GO) test ./bench/... ./chaos/... ./internal/...
	go test ./api/v1alpha1 -run='^$$' -fuzz=FuzzHubRoundTrip -fuzztime=5s
	go test ./api/v1alpha1 -run='^$$' -fuzz=FuzzSpokeRoundTrip -fuzztime=5s
	go test ./internal/webhook -run='^$$' -fuzz=FuzzValidateAt -fuzztime=5s

# promtool (hack/tools/promtool, built on demand into bin/ like the
# linters) checks the alerts of kustomize/components/monitoring and runs
# their unit tests (tests/*.yaml: each alert fires and stays silent on
# synthetic series); hack/monitoring's tests parse every expression of the
# alerts and the dashboard and check each metric and label against what
# the controller exports.
MONITORING := kustomize/components/monitoring

.PHONY: test-monitoring
test-monitoring: ## Check and unit-test the alerts with promtool; check the dashboard's and alerts' PromQL against the controller's metrics.
	hack/tools.sh promtool >/dev/null
	$(BIN)/promtool check rules $(MONITORING)/rules.yaml
	$(BIN)/promtool test rules $(MONITORING)/tests/*.yaml
	cd hack/monitoring && GOWORK=off go mod tidy -diff && GOWORK=off go test ./... -count=1

.PHONY: test-integration
test-integration: tools ## Integration tests against a real API server (envtest): reconciler, webhooks, cnatctl.
	go test ./internal/controller/... ./internal/webhook/... ./internal/manifests/... ./internal/cli/... ./internal/metricsauth/... -count=1

.PHONY: e2e
e2e: cluster build ## The end-to-end suite (e2e/) on the local cluster, the controller running as its ServiceAccount.
	hack/e2e-local.sh

# CHAOS_SIZE is default (200 Ats per scenario, 12 SIGKILLs...) or small;
# CHAOS_ARGS go to hack/chaos (e.g. -scenarios=sigkill,janitor -ats=500).
CHAOS_SIZE ?= default
CHAOS_ARGS ?=

.PHONY: chaos
chaos: cluster build ## Attack cnat's promises on the local cluster (controller SIGKILLed, leader stopped, API server and etcd restarted, webhook down, Ats re-created, Pods deleted, Pods refused by a policy, a webhook and a quota, nodes drained, Pods forged by a user, a co-tenant's decoys, forged statuses, forced deletions and revoked rights, uninstall), judged from the audit log; CHAOS_SIZE=small|default.
	hack/chaos.sh -size=$(CHAOS_SIZE) $(CHAOS_ARGS)

.PHONY: e2e-real
e2e-real: cluster build ## The end-to-end suite on real Pods: the real node, cnat in-cluster (skipped where there is no real node).
	hack/e2e-real.sh

# Not in make test (CI's 90 minutes): the release in dist/ (make release)
# installed from install.yaml and from the production overlay on a new local
# cluster with cert-manager, the e2e suite against each, the uninstall; and
# the upgrade from the previous release (CNAT_PREVIOUS) judged from the
# audit log. Each recreates the local cluster.
.PHONY: e2e-release
e2e-release: tools build ## The release in dist/ installed as the README says (install.yaml, then the production overlay), the e2e suite against each on the real node, then uninstalled; a new local cluster with cert-manager.
	hack/e2e-release.sh install

.PHONY: e2e-upgrade
e2e-upgrade: tools build ## The previous release (CNAT_PREVIOUS) installed, Ats running, retrying and pending, dist/install.yaml applied over it while a client writes and reads Ats; judged from the audit log (0 duplicates, lost, refused).
	hack/e2e-release.sh upgrade

.PHONY: e2e-kind
e2e-kind: ## The end-to-end suite on kind (needs Docker and kind; what GitHub Actions runs; KIND_NODE_IMAGE: another node image).
	hack/e2e-kind.sh

# What make e2e-kind runs after kind's own steps (cluster creation, kind
# load), on a new local cluster: the cluster is recreated first, as kind's
# is new, since the kind overlay is an ApplySet of its own (make cluster-down
# before make e2e or run again).
.PHONY: e2e-kind-local
e2e-kind-local: tools build ## make e2e-kind's steps but kind's own on a new local cluster: its image built without Docker and imported into the real node under the kind overlay's name, kustomize/overlays/kind applied with cnatctl, the suite.
	$(MAKE) --no-print-directory cluster-down
	$(MAKE) --no-print-directory cluster
	hack/e2e-kind-local.sh

# The oldest Kubernetes cnat supports, KUBE_OLDEST, and the minor before it,
# KUBE_TOO_OLD, whose kube-apiserver cnatctl apply must refuse. Not in make
# test: a second Kubernetes built cold costs most of CI's time; the numbers
# are in README's "Kubernetes versions".
KUBE_TOO_OLD := $(shell sed -n 's|^require k8s.io/kubernetes \(v[^ ]*\)$$|\1|p' hack/tools/kubernetes-v1.31/go.mod)

.PHONY: test-oldest
test-oldest: test-version-gate ## The oldest supported Kubernetes (KUBE_OLDEST): make e2e and make e2e-real on a local cluster of it, and make test-version-gate.
	$(MAKE) --no-print-directory e2e e2e-real KUBE_VERSION=$(KUBE_OLDEST)

.PHONY: test-version-gate
test-version-gate: tools ## cnatctl apply against a real kube-apiserver one minor older than the minimum (KUBE_TOO_OLD, built into bin/k8s/): refused before anything changes.
	KUBE_VERSION=$(KUBE_TOO_OLD) hack/tools.sh kube-apiserver
	go test ./internal/cli -run '^TestApplyRefusesARealTooOldAPIServer$$' -count=1 -v

# Not in make test: every mutant costs a build and a test run (the webhook's
# an API server), most of an hour in all. MUTATE_PACKAGES: a subset.
MUTATE_PACKAGES ?=

.PHONY: mutate
mutate: tools ## Mutation testing of internal/lifecycle, scheduler, atpod, controller/atstatus and the At validator (gremlins): the table of docs/mutation.md; fails below its goals.
	hack/mutate.sh $(MUTATE_PACKAGES)

.PHONY: fuzz
fuzz: ## Fuzz the schedule parser, both conversion round trips and At validation, a minute each.
	go test ./internal/scheduler -run='^$$' -fuzz=FuzzParseSchedule -fuzztime=60s
	go test ./api/v1alpha1 -run='^$$' -fuzz=FuzzHubRoundTrip -fuzztime=60s
	go test ./api/v1alpha1 -run='^$$' -fuzz=FuzzSpokeRoundTrip -fuzztime=60s
	go test ./internal/webhook -run='^$$' -fuzz=FuzzValidateAt -fuzztime=60s

##@ Local cluster

.PHONY: tools
tools: ## Build the pinned tools into bin/ (skips what is already built).
	hack/tools.sh

.PHONY: cluster
cluster: tools ## Start the embedded local cluster: a real node where the machine allows (the default for Pods), simulated nodes (opt-in; the default where no real node runs); kubeconfig in .local/kubeconfig.
	hack/cluster-up.sh
	hack/real-node-up.sh

.PHONY: cluster-down
cluster-down: ## Remove the embedded local cluster and undo what the real node changed on the host.
	hack/real-node-down.sh
	hack/cluster-down.sh

.PHONY: install
install: cluster build ## Install the local overlay (CRD, RBAC, webhook configurations) into the local cluster with cnatctl.
	$(BIN)/cnatctl --kubeconfig $(LOCAL_KUBECONFIG) apply -k kustomize/overlays/local --name local --change-source --prune

.PHONY: run
run: install ## Run cnat on the local cluster with a sample At a few seconds ahead; shows its status and output, then what to try next.
	hack/run-local.sh

##@ Benchmark

# Flags for hack/bench, e.g. BENCH_FLAGS='-n 10000', '-stages raw,cnat' or
# '-stages raw,cnat -repeat 3' (paired runs: the median ratio and its spread);
# `hack/harness.sh bench -h` lists them.
BENCH_FLAGS ?=

.PHONY: bench
bench: install ## N Ats due at one instant, side by side with raw Pod creation (the limit) and the CronJob controller; updates docs/benchmarks.md.
	CGO_ENABLED=0 go build -trimpath -ldflags="-s -w" -o $(BIN)/cnat-controller ./cmd/cnat-controller
	hack/harness.sh bench -kubeconfig $(LOCAL_KUBECONFIG) -doc docs/benchmarks.md -plot docs/benchmarks-lateness.svg -memory-plot docs/benchmarks-memory.svg $(BENCH_FLAGS)

##@ Build

# The release, from VERSION: the tag of the controller image in every
# overlay (kustomize/base/manager/kustomization.yaml pins it, and
# TestOverlayImages in make verify fails when they differ or an image is
# latest or untagged), the tag docker-build gives the image, and cnatctl's
# version. A release changes VERSION and that newTag together.
VERSION := $(shell cat $(CURDIR)/VERSION)

# The commit both binaries report in --version (empty outside a git work
# tree: they fall back on what go build recorded).
COMMIT := $(shell git rev-parse HEAD 2>/dev/null)
# The linker flags that stamp both into internal/buildinfo.
STAMP := -X github.com/programming-kubernetes/cnat/internal/buildinfo.StampedVersion=$(VERSION) -X github.com/programming-kubernetes/cnat/internal/buildinfo.StampedCommit=$(COMMIT)

# The controller image (the name the base deploys; the kind e2e builds
# cnat-controller:$(VERSION), the name its overlay loads).
IMG ?= ghcr.io/programming-kubernetes/cnat-controller:$(VERSION)

.PHONY: build
build: ## Build the controller and cnatctl (also as the kubectl plugin kubectl-cnat) into bin/.
	go build -ldflags "$(STAMP)" -o $(BIN)/cnat-controller ./cmd/cnat-controller
	go build -ldflags "$(STAMP)" -o $(BIN)/cnatctl ./cmd/cnatctl
	ln -sf cnatctl $(BIN)/kubectl-cnat

.PHONY: docker-build
docker-build: ## Build the controller image (needs a Docker engine).
	docker build -t $(IMG) .

##@ Release

# The release tools, built from source into bin/ like every other tool.
RELEASE_TOOLS := goreleaser cyclonedx-gomod validate-krew-manifest krew

# The two steps before hack/release.sh are the only ones that may use the
# network (the module proxy), to fill bin/ and the module cache; the release
# itself runs offline (GOPROXY=off). Not part of make test.
.PHONY: release
release: ## Build everything a release ships into dist/, offline, and verify it (docs/release.md): cnatctl archives, the controller image index, install.yaml pinned by digest, SBOMs, krew manifest, notes, checksums.txt.
	hack/tools.sh $(RELEASE_TOOLS)
	go mod download
	$(HARNESS_GO) mod download
	hack/release.sh

.PHONY: release-verify
release-verify: ## Verify dist/: sha256sum -c checksums.txt, install.yaml pins the image digest of dist/, the krew manifest's hashes, the binaries' versions.
	hack/tools.sh validate-krew-manifest krew
	hack/release.sh verify
