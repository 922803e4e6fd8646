# sluice — `make help` lists the targets.
SHELL := bash
GO    ?= go
BIN   := bin/sluice
PKGS  := ./...
# Bounds: every long-running target stops by itself.
FUZZTIME  ?= 20s
BENCHTIME ?= 1s
VERSION   ?= $(shell git describe --tags --dirty 2>/dev/null || echo dev)
COMMIT    ?= $(shell git rev-parse --short HEAD 2>/dev/null)
# make run's ports.
PORT  ?= 8080
ADMIN ?= 2019

.DEFAULT_GOAL := help

.PHONY: help
help: ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-12s %s\n", $$1, $$2}'

.PHONY: build
build: ## build bin/sluice
	$(GO) build -ldflags "-X main.version=$(VERSION) -X main.commit=$(COMMIT)" -o $(BIN) ./cmd/sluice

.PHONY: run
run: build quickstart-config ## serve examples/quickstart on http://127.0.0.1:8080 (PORT=, ADMIN= for other ports)
	@echo "sluice: serving examples/quickstart on http://127.0.0.1:$(PORT), admin on 127.0.0.1:$(ADMIN) (Ctrl-C stops)"
	cd examples/quickstart && ../../$(BIN) serve -c .run.hcl

# examples/quickstart/.run.hcl is sluice.hcl on PORT and ADMIN, beside it
# so that its relative paths hold (TestMakeRunPorts).
.PHONY: quickstart-config
quickstart-config:
	@sed -e 's/"127\.0\.0\.1:8080"/"127.0.0.1:$(PORT)"/' -e 's/"127\.0\.0\.1:2019"/"127.0.0.1:$(ADMIN)"/' \
	  examples/quickstart/sluice.hcl > examples/quickstart/.run.hcl

.PHONY: test
# Guest modules (SDK, Go filters, examples) are modules of their own.
NESTED := $(shell git ls-files '*/go.mod' | xargs -n1 dirname | sort)

test: ## run every test (Go toolchain only; committed .wasm guests)
	$(GO) test -count=1 $(PKGS)
	@set -e; for m in $(NESTED); do echo "== $$m"; (cd $$m && $(GO) test -count=1 ./...); done

.PHONY: test-race
test-race: ## run every test with the race detector
	$(GO) test -count=1 -race $(PKGS)

.PHONY: bench
bench: ## run the Go benchmarks (-benchmem), BENCHTIME each
	$(GO) test -run '^$$' -bench . -benchmem -benchtime $(BENCHTIME) $(PKGS)

.PHONY: bench-peers
bench-peers: build ## sluice beside nginx and Caddy (../shared/bench/peers --quick; PEERS_ARGS= for a full run)
	./.ci/bench-peers $${PEERS_ARGS---quick}

.PHONY: bench-proxy-tls
bench-proxy-tls: ## end-to-end TLS reverse proxy beside nginx (needs nginx, wrk, taskset)
	./host/proxy/testdata/e2etls/run.sh 3 8

.PHONY: bench-filter-route
bench-filter-route: ## a route with the headers filter beside the same route without it, one server (needs wrk, taskset, curl)
	./host/chain/testdata/wrk/run.sh 4 $${BENCH_ROUTE_SECS:-5}

.PHONY: bench-store
bench-store: ## a global rate limit's cost: local buckets vs Redis under wrk (needs redis-server, wrk, taskset)
	./conformance/store/testdata/wrk.sh 5 3

.PHONY: bench-waf
bench-waf: ## filters/waf beside native Coraza middleware, one run (needs wrk, taskset; BENCH_WAF_SECS, default 10)
	./filters/waf/bench/run.sh $${BENCH_WAF_SECS:-10}

.PHONY: fuzz
fuzz: ## run every fuzz target for FUZZTIME each
	@set -e; for spec in $$(grep -rl --include='*_test.go' '^func Fuzz' . | xargs grep -h -o '^func Fuzz[A-Za-z0-9_]*' /dev/null | sort -u | sed 's/func //'); do \
	  pkg=$$(grep -rl --include='*_test.go' "^func $$spec(" . | head -1 | xargs dirname); \
	  echo "== $$spec in $$pkg"; \
	  $(GO) test -run '^$$' -fuzz "^$$spec$$" -fuzztime $(FUZZTIME) $$pkg; \
	done

.PHONY: conformance
conformance: ## black-box suites with real peers (TCK, h2spec, Prometheus, Jaeger, Pebble, Redis, the CRS regression)
	$(GO) test -count=1 -tags conformance -timeout 20m ./conformance/...
	cd conformance/crs && $(GO) test -count=1 -tags conformance -timeout 20m .

.PHONY: systemd-verify
systemd-verify: ## check the systemd units (examples/deploy/systemd) with systemd-analyze verify
	SLUICE_CONFORMANCE_STRICT=1 $(GO) test -count=1 -tags conformance -run '^TestSystemdUnits$$' ./conformance/upgrade/

.PHONY: image
image: ## build the container image (examples/deploy/Dockerfile) with podman, run it, send a request through it
	./.ci/image

.PHONY: wasm
wasm: ## rebuild the committed .wasm guests whose toolchains are present
	@./.ci/wasm

.PHONY: examples
examples: ## boot every example and check its responses
	$(GO) test -count=1 ./examples/...

.PHONY: lint
lint: ## go vet and gofmt
	$(GO) vet $(PKGS)
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

.PHONY: fmt
fmt: build ## gofmt the Go code; sluice fmt -w every .hcl outside testdata (fixtures keep their layout: goldens point into them)
	gofmt -w $$(git ls-files '*.go')
	@for f in $$(git ls-files '*.hcl' | grep -v /testdata/); do $(BIN) fmt -w $$f || exit 1; done

.PHONY: check
check: lint wasm ## pre-flight: lint, rebuild guests, fail on a dirty tree
	@git diff --exit-code --stat || (echo "check: the tree changed (gofmt or make wasm); commit the result"; exit 1)
