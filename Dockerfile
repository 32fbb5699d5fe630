# meteorbench: one static binary in a minimal, non-root image.
#   docker build -t meteorbench .
#   docker run --rm -p 8080:8080 -p 8080:8080/udp meteorbench   # serve REST + gRPC on :8080, HTTP/3 on UDP :8080
#   docker run --rm -e METEORBENCH_ADDR=:9000 -p 9000:9000 -p 9000:9000/udp meteorbench   # another port
#   docker run --rm --network host -v "$PWD/out:/out" --user "$(id -u):$(id -g)" meteorbench \
#     run --target 127.0.0.1:8080 --out /out/run1 --format table,json   # load it; results in ./out
# (docs/server.md has the details: HEALTHCHECK, read-only root, --out volume.)
# deploy/dockertest builds and runs the runtime stage below with no registry:
# keep its one "COPY --from=build" line, and RUNTIME_BASE as its FROM.

# The runtime base; a build argument so a test can point it at a locally
# imported root file system instead of pulling.
ARG RUNTIME_BASE=gcr.io/distroless/static-debian12:nonroot

FROM golang:1.26 AS build
WORKDIR /src
COPY . .
ARG VERSION=docker
# CGO off: a static binary that needs no libc in the runtime image.
RUN --mount=type=cache,target=/go/pkg/mod \
    --mount=type=cache,target=/root/.cache/go-build \
    CGO_ENABLED=0 go build -trimpath -buildvcs=false \
      -ldflags "-s -w -X github.com/meteorbench/meteorbench/internal/buildinfo.version=${VERSION}" \
      -o /out/meteorbench ./cmd/meteorbench

# distroless/static: no shell, no package manager, a nonroot user (65532).
FROM ${RUNTIME_BASE}
COPY --from=build /out/meteorbench /usr/local/bin/meteorbench
USER nonroot:nonroot
# serve listens on $METEORBENCH_ADDR unless --addr is given, and writes the
# address it bound to $METEORBENCH_ADDR_FILE; health (no --addr) reads that
# file, else $METEORBENCH_ADDR. So the HEALTHCHECK follows both
# "-e METEORBENCH_ADDR=:9000" and "serve --addr :9000". /tmp is the one place
# written; with --read-only add --tmpfs /tmp (without it serve warns once and
# the check falls back to $METEORBENCH_ADDR).
ENV METEORBENCH_ADDR=:8080 \
    METEORBENCH_ADDR_FILE=/tmp/meteorbench.addr
# REST, gRPC, gRPC-Web and Connect on TCP; HTTP/3 (QUIC) on UDP, same port.
EXPOSE 8080/tcp 8080/udp
# No shell in the image: the binary checks itself (GET /healthz and grpc.health.v1).
HEALTHCHECK --interval=15s --timeout=3s --start-period=5s --retries=3 \
  CMD ["/usr/local/bin/meteorbench", "health"]
ENTRYPOINT ["/usr/local/bin/meteorbench"]
CMD ["serve"]
