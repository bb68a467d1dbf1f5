# syntax=docker/dockerfile:1
# Switchyard container image: `make image` (or docker/podman build .).
#
# Build stage: a static binary (CGO_ENABLED=0: no libc needed at run time)
# with the version stamped into cli.Version (what `switchyard version`
# prints). For another architecture, BuildKit's --platform sets
# TARGETOS/TARGETARCH; without them Go builds for the builder's own.
ARG GO_VERSION=1.26
FROM golang:${GO_VERSION} AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG VERSION=dev
ARG TARGETOS
ARG TARGETARCH
RUN CGO_ENABLED=0 GOOS=${TARGETOS:-linux} GOARCH=${TARGETARCH} \
    go build -trimpath -ldflags "-s -w -X github.com/switchyard/switchyard/cli.Version=${VERSION}" \
    -o /out/switchyard .

# Run stage: distroless static (CA certificates and tzdata for HTTPS
# upstreams, no shell, no package manager), as its non-root user 65532.
# The gateway writes nothing to disk (logs go to stderr), so it runs with a
# read-only root filesystem.
FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/switchyard /usr/local/bin/switchyard
USER 65532:65532
ENV SWITCHYARD_CONFIG=/etc/switchyard/config.yaml
EXPOSE 8080
ENTRYPOINT ["/usr/local/bin/switchyard"]
CMD ["serve"]
