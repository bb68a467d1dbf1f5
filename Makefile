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

clean:
	rm -f switchyard
