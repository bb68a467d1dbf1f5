# Switchyard build, test and benchmark entry points.
# Tools are fetched through the Go module proxy, so a fresh machine needs only Go.

GO          ?= go
STATICCHECK ?= $(GO) run honnef.co/go/tools/cmd/staticcheck@v0.8.2

.PHONY: all build test vet staticcheck bench demo clean

all: build

build:
	$(GO) build -o switchyard .

vet:
	$(GO) vet ./...

staticcheck:
	$(STATICCHECK) ./...

test: vet staticcheck
	$(GO) test -race -shuffle=on -timeout 15m ./...

# demo builds switchyard and the mock upstream, starts four mock providers and
# the gateway on 127.0.0.1:8080 (demo/demo.yaml), and prints curl commands.
# Offline; Ctrl-C stops everything. Ports: see demo/run.sh.
demo:
	GO=$(GO) ./demo/run.sh

# bench builds switchyard, the mock upstream and the bare proxy into a temp
# dir, measures them as separate pinned processes and writes bench/RESULTS.md
# and bench/latency.svg (see bench/README.md). About 3½ minutes on 2 cores.
# Extra options: make bench BENCHFLAGS="-duration 10s -pin=false".
bench:
	$(GO) run ./bench/cmd/benchrun $(BENCHFLAGS)

clean:
	rm -f switchyard
