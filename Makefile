# drainit — see README.md. `make demo` first, then `make test`.
GO      ?= go
BIN     ?= bin/drainit
VERSION ?= $(shell git describe --always --dirty 2>/dev/null || echo dev)
LDFLAGS := -s -w -X main.version=$(VERSION) -X main.commit=$(shell git rev-parse HEAD 2>/dev/null) -X main.date=$(shell git log -1 --format=%cI 2>/dev/null)
STATICCHECK := honnef.co/go/tools/cmd/staticcheck@v0.8.2
# Every package of the workspace (go.work): the init's module, and the manifest check's in check/,
# which ./... at the root does not reach.
PKGS    := ./... ./check/...
.PHONY: build drainit test unit kubelet lint bench demo fuzz clean release

## demo: build drainit and the test app, then stop pods under load side by side: bare, tini,
## preStop sleep, drainit fixed and adaptive, and a real nginx bare and behind drainit (root: each
## pod is PID 1 of its own PID namespace; ~40 s)
demo:
	./scripts/demo.sh

## build: the static, stripped binaries in bin/: drainit, and drainit-check (the manifest check,
## which `drainit check` runs: a module of its own, check/, so that drainit links no YAML parser)
build: drainit
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags '$(LDFLAGS)' -o $(dir $(BIN))drainit-check ./check/cmd/drainit-check

## drainit: bin/drainit alone (BIN=path to put it elsewhere), as the releases build it
drainit:
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags '$(LDFLAGS)' -o $(BIN) ./cmd/drainit

## cross: drainit and drainit-check for macOS and Windows (amd64, arm64) in bin/cross/, for
## `drainit check` where the manifests are; there only check, version, sleep and prestop work
## (running an app needs Linux)
CROSS ?= darwin/amd64 darwin/arm64 windows/amd64 windows/arm64
.PHONY: cross
cross:
	@for p in $(CROSS); do \
	  os=$${p%/*}; arch=$${p#*/}; ext=; if [ "$$os" = windows ]; then ext=.exe; fi; \
	  for pkg in ./cmd/drainit ./check/cmd/drainit-check; do \
	    cmd=$${pkg##*/}; echo "cross: bin/cross/$$os-$$arch/$$cmd$$ext"; \
	    CGO_ENABLED=0 GOOS=$$os GOARCH=$$arch $(GO) build -trimpath -ldflags '$(LDFLAGS)' \
	      -o bin/cross/$$os-$$arch/$$cmd$$ext $$pkg || exit 1; \
	  done; \
	done

## test: lint, the release snapshot, then every test (unit, fuzz seeds, the integration tests on
## the real binary under podman, under a real kubelet on containerd and behind a real kube-proxy,
## and the checks of dist/)
test: lint release unit

## release: every release artifact in dist/, as a tag would publish them (GoReleaser snapshot,
## nothing signed or uploaded): static binaries for linux amd64, arm64, arm/v7, ppc64le, s390x,
## riscv64 and darwin/windows amd64, arm64, as archives and bare files; checksums.txt; an SPDX SBOM
## per archive; .deb and .apk packages; the multi-arch image FROM scratch as an OCI archive.
## Needs podman; goreleaser and syft are pinned and built from source (scripts/tool.sh)
release:
	./scripts/release.sh

# The real-kubelet and real-kube-proxy tests need root (they skip without it, except under
# CI=true): only then are the kubelet, kube-apiserver, kube-controller-manager and kube-proxy built
# (or taken from the cache), before the tests and outside their timeout.
K8S_CMDS := kubelet kube-apiserver kube-controller-manager kube-proxy
unit:
	@if [ "$$(id -u)" = 0 ] || [ "$$CI" = true ]; then $(MAKE) --no-print-directory kubelet; fi
	DRAINIT_KUBELET=$$([ "$$(id -u)" = 0 ] && ./scripts/kubelet.sh) DRAINIT_DIST=$(CURDIR)/dist \
	  $(GO) test -count=1 -timeout 20m $(PKGS)

## kubelet: build the real kubelet, kube-apiserver, kube-controller-manager and kube-proxy the
## tests run, from tools/kubelet (cached: a cold build takes minutes, a warm one nothing;
## DRAINIT_CACHE moves the cache)
kubelet:
	@for c in $(K8S_CMDS); do ./scripts/kubelet.sh $$c >/dev/null || exit 1; done

## bench: drainit side by side with tini, dumb-init and catatonit, each as PID 1 (root;
## BENCHFLAGS=-quick for a short run), the control server's answer latency while a client holds
## 300 slow connections, then the stop duration of adaptive drains (--drain-quiet auto and 1s)
## against fixed 5 s and 10 s ones in the rollout harness, at 3 propagation delays, behind
## several proxies, at DRAINRATES new connections a second, and of the 1 s quiet period behind
## pooling L7 proxies (counting connections, then requests: the "L7 pooled" rows); writes
## bench/RESULTS.md and bench/DRAIN.md; the automatic quiet period beside a sidecar and in the
## host's network namespace: bench/DRAIN-SHARED.md; then the same stops on a real kubelet, containerd,
## API server and kube-proxy (CLUSTERREPEAT a cell), beside the kubelet's own preStop sleep:
## bench/DRAIN-CLUSTER.md. DRAINREPEAT=20 DRAINREPEATFIXED=2 for issue 16's 20 stops a cell
## (~60 min)
DRAINREPEAT ?= 5
DRAINREPEATFIXED ?= 1
DRAINRATES ?= 20,200,1000
CLUSTERREPEAT ?= 5
bench: build
	$(GO) run ./bench -drainit $(BIN) $(BENCHFLAGS)
	@echo "bench: pod stop duration at zero failures, adaptive vs fixed drains, L4 and L7 proxies (about 17 minutes)..."
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags '-s -w' -o bin/testapp ./integration/testapp
	$(GO) build -o bin/rollout ./integration/rollout/cmd/rollout
	bin/rollout -drainit $(BIN) -testapp bin/testapp -scenarios drains -propagation 0.2s,1s,3s \
		-topologies staggered,straggler -rates $(DRAINRATES) -poisson -repeat $(DRAINREPEAT) \
		-repeat-fixed $(DRAINREPEATFIXED) -drain-table -q | tee bench/DRAIN.md
	@echo "bench: the automatic quiet period in shared network namespaces, beside a sidecar and on the host's (about 8 minutes)..."
	@{ echo "# The automatic quiet period in shared network namespaces"; echo; \
	  echo "\`make bench\` rewrites this file: \`bin/rollout -scenarios drainit-auto … -sidecar\` (each pod's network"; \
	  echo "namespace also holds a sidecar's listener with traffic of its own, 20 new connections a second),"; \
	  echo "then \`-host-network\` (the pods share the harness's namespace, as hostNetwork pods do): drainit"; \
	  echo "counts with sock-diag, from the history of the app's own listeners (issue 40). $$(git rev-parse --short HEAD), $$(date -u +%F)."; \
	  echo; echo "## Beside a sidecar"; echo; \
	  bin/rollout -drainit $(BIN) -testapp bin/testapp -scenarios drainit-auto -propagation 0.2s,1s,3s -topologies staggered \
		-rates 20,200 -poisson -repeat $(DRAINREPEAT) -drain-table -q -sidecar; \
	  echo; echo "## In the host's network namespace"; echo; \
	  bin/rollout -drainit $(BIN) -testapp bin/testapp -scenarios drainit-auto -propagation 0.2s,1s,3s -topologies staggered \
		-rates 20,200 -poisson -repeat $(DRAINREPEAT) -drain-table -q -host-network; } | tee bench/DRAIN-SHARED.md
	@echo "bench: the same stops on a real kubelet, containerd and kube-proxy, with the kubelet's own preStop sleep beside (about $$(($(CLUSTERREPEAT) + 2)) minutes)..."
	@$(MAKE) --no-print-directory kubelet
	DRAINIT_KUBELET=$$(./scripts/kubelet.sh) $(GO) test -run '^$$' -bench '^BenchmarkClusterDrain$$' \
		-benchtime $(CLUSTERREPEAT)x -timeout 90m ./integration/node -args -cluster-table $(CURDIR)/bench/DRAIN-CLUSTER.md
	@cat bench/DRAIN-CLUSTER.md

## lint: gofmt, go vet, staticcheck; the release configuration (goreleaser check) and the
## release workflow (actionlint)
lint:
	@out=$$(gofmt -l $$(git ls-files -co --exclude-standard '*.go')); if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	$(GO) vet $(PKGS)
	GOOS=darwin $(GO) vet ./cmd/... ./check/... ./internal/config/... ./signals/...
	GOOS=windows $(GO) vet ./cmd/... ./check/... ./internal/config/... ./signals/...
	$(GO) run $(STATICCHECK) $(PKGS)
	"$$(./scripts/tool.sh goreleaser)" check --quiet
	"$$(./scripts/tool.sh actionlint)" .github/workflows/*.yml

## fuzz: run each fuzz target for FUZZTIME (the seed corpora run in every `make test`)
FUZZTIME ?= 30s
fuzz:
	@for pkg in $$($(GO) list $(PKGS)); do \
	  for t in $$($(GO) test -list '^Fuzz' $$pkg | grep '^Fuzz'); do \
	    echo "== $$pkg $$t"; $(GO) test -run '^$$' -fuzz "^$$t\$$" -fuzztime $(FUZZTIME) $$pkg || exit 1; \
	  done; \
	done

clean:
	rm -rf bin dist
