# podward — `make help` lists the targets.
GO      ?= go
BIN     ?= bin/podward
PKGS    := ./...
# Packages with goroutines run under the race detector.
RACE_PKGS := ./internal/...

# How long `make fuzz` runs each fuzz target.
FUZZTIME ?= 30s

.PHONY: help build kubectl-plugin test test-unit test-integration fuzz fuzz-smoke bench bench-go vet fmt-check clean cri-up cri-down cp-up cp-down timeline-picture

help: ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk 'BEGIN{FS=":.*## "}{printf "  %-18s %s\n", $$1, $$2}'

build: ## build bin/podward
	$(GO) build -o $(BIN) ./cmd/podward

# Where `make kubectl-plugin` puts the kubectl-podward link (bin/ by default).
PLUGIN_DIR ?= $(dir $(BIN))

kubectl-plugin: build ## link PLUGIN_DIR/kubectl-podward (default bin/) to the podward binary: with that directory on PATH, `kubectl podward logs POD -c DEFER` works
	ln -sf $(abspath $(BIN)) $(PLUGIN_DIR)kubectl-podward

vet: ## go vet
	$(GO) vet $(PKGS)

fmt-check: ## fail when a file is not gofmt-formatted
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$out" ]; then echo "not gofmt-formatted:"; echo "$$out"; exit 1; fi

test-unit: ## the fast inner loop: unit tests of every internal package, with -race
	$(GO) test -race -count=1 $(RACE_PKGS)

test-integration: build ## end-to-end tests: both runtimes (real processes; real containers in a private containerd, hack/with-cri.sh; root) and cluster mode (a real kube-apiserver, hack/with-control-plane.sh)
	hack/with-cri.sh hack/with-control-plane.sh $(GO) test -count=1 -timeout 30m ./internal/runtime/cri/ ./test/...

fuzz: ## run every fuzz target for FUZZTIME each (default 30s; hack/fuzz.sh)
	GO=$(GO) FUZZTIME=$(FUZZTIME) hack/fuzz.sh

fuzz-smoke: ## every fuzz target for 3 s each, as CI does
	GO=$(GO) FUZZTIME=3s hack/fuzz.sh

test: fmt-check vet test-unit fuzz-smoke test-integration ## everything CI runs

# Flags of `podward bench` (e.g. BENCH_ARGS='--only start,stop --start-pods 200').
BENCH_ARGS ?=
BENCH_OUT  ?= bench-results.json

bench: build ## podward bench: start/stop/scale/churn against a podward serve it starts, beside the floor; table + BENCH_OUT (bench-results.json); BENCH_ARGS its flags (root; some 15 minutes)
	$(BIN) bench --out $(BENCH_OUT) $(BENCH_ARGS)

bench-go: ## Go benchmarks (go test -bench)
	$(GO) test -run '^$$' -bench . -benchmem $(PKGS)

timeline-picture: build ## run the defer-containers demo pod for real (root) and draw docs/timeline.svg from its timeline
	PODWARD=$(BIN) hack/timeline-picture.sh docs/timeline.svg

cri-up: ## start the CRI test environment by hand (containerd + docker.io mirror); prints CRI_ENDPOINT
	hack/cri-up.sh

cri-down: ## tear the CRI test environment down
	hack/cri-down.sh

cp-up: ## start the throw-away control plane by hand (etcd + kube-apiserver on loopback); prints KUBECONFIG
	hack/control-plane-up.sh

cp-down: ## stop the control plane
	hack/control-plane-down.sh

clean: ## remove build output
	rm -rf bin
