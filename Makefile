# Switchyard build, test and benchmark entry points.
# Tools are fetched through the Go module proxy, so a fresh machine needs only Go.

GO          ?= go
STATICCHECK ?= $(GO) run honnef.co/go/tools/cmd/staticcheck@v0.8.2

.PHONY: all build test fmt vet staticcheck bench demo image clean

all: build

build:
	$(GO) build -o switchyard .

# fmt fails when gofmt would change a file (and lists them).
fmt:
	@files=$$(gofmt -l .); if [ -n "$$files" ]; then echo "gofmt would change:"; echo "$$files"; exit 1; fi

vet:
	$(GO) vet ./...

staticcheck:
	$(STATICCHECK) ./...

# test runs the race-detector suite, then the zero-allocation and
# stack-depth tests once more without -race: they are built only without it
# (the race detector allocates and deepens stacks), so -race alone skips them.
test: fmt vet staticcheck
	$(GO) test -race -shuffle=on -timeout 15m ./...
	$(GO) test -count=1 -run 'Alloc|ReuseBuffers|CommittedStreamStack' ./...

# demo builds switchyard and the mock upstream, starts four mock providers and
# the gateway on 127.0.0.1:8080 (demo/demo.yaml), and prints curl commands.
# Offline; Ctrl-C stops everything. Ports: see demo/run.sh.
demo:
	GO=$(GO) ./demo/run.sh

# bench builds switchyard, the mock upstream and the bare proxy into a temp
# dir, measures them as separate pinned processes and writes bench/RESULTS.md
# (see bench/README.md). About 10 minutes on 2 cores.
# Extra options: make bench BENCHFLAGS="-duration 10s -pin=false".
bench:
	$(GO) run ./bench/cmd/benchrun $(BENCHFLAGS)

# image builds the container image from Dockerfile (static binary on
# distroless, non-root) as $(IMAGE), with the version stamped in. It needs
# docker or podman (CONTAINER_TOOL=... to choose) that can reach its
# daemon; without one it stops with a message saying so.
VERSION        ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
IMAGE          ?= switchyard:$(VERSION)
CONTAINER_TOOL ?= $(shell command -v docker 2>/dev/null || command -v podman 2>/dev/null)

image:
	@if [ -z "$(CONTAINER_TOOL)" ]; then \
		echo "make image: no container runtime found (looked for docker and podman in PATH)." >&2; \
		echo "Install one, or set CONTAINER_TOOL=/path/to/docker; the binary alone builds with: make build" >&2; \
		exit 1; \
	fi
	@if ! $(CONTAINER_TOOL) info >/dev/null 2>&1; then \
		echo "make image: $(CONTAINER_TOOL) is installed but cannot reach its daemon/service ($(CONTAINER_TOOL) info failed)." >&2; \
		exit 1; \
	fi
	$(CONTAINER_TOOL) build --build-arg VERSION=$(VERSION) -t $(IMAGE) .

clean:
	rm -f switchyard
