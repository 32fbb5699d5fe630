# syntax=docker/dockerfile:1
# meteorbench: one static binary in a minimal, non-root image.
#   docker build -t meteorbench .
#   docker run --rm -p 8080:8080 meteorbench            # serve REST + gRPC on :8080
#   docker run --rm --network host meteorbench run      # load a server on this host

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
FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/meteorbench /usr/local/bin/meteorbench
USER nonroot:nonroot
EXPOSE 8080
# No shell in the image: the binary checks itself (GET /healthz and grpc.health.v1).
HEALTHCHECK --interval=15s --timeout=3s --start-period=5s --retries=3 \
  CMD ["/usr/local/bin/meteorbench", "health", "--addr", "127.0.0.1:8080"]
ENTRYPOINT ["/usr/local/bin/meteorbench"]
CMD ["serve", "--addr", ":8080"]
