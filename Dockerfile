# agnogo as a container: a static binary on a distroless base, run as a
# non-root user, its SQLite database and media under /data.
#
#   docker build -t agnogo .
#   docker run -p 7777:7777 -v agnogo-data:/data -e OPENAI_API_KEY agnogo
#
# Mount a config at /etc/agnogo/agnogo.yaml and pass --config to use it.

FROM golang:1.26-bookworm AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN --mount=type=cache,target=/go/pkg/mod go mod download
COPY . .
# The version agnogo reports (/info, agnogo version): docker build --build-arg VERSION=v1.2.3
ARG VERSION=devel
RUN --mount=type=cache,target=/go/pkg/mod --mount=type=cache,target=/root/.cache/go-build \
    CGO_ENABLED=0 go build -trimpath -buildvcs=false \
      -ldflags "-s -w -X github.com/agnogo/agnogo/internal/buildinfo.version=${VERSION}" \
      -o /out/agnogo ./cmd/agnogo

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/agnogo /usr/local/bin/agnogo
WORKDIR /data
VOLUME ["/data"]
EXPOSE 7777
USER nonroot:nonroot
HEALTHCHECK --interval=30s --timeout=5s --start-period=20s --retries=3 \
    CMD ["/usr/local/bin/agnogo", "health", "--addr", "127.0.0.1:7777"]
ENTRYPOINT ["/usr/local/bin/agnogo"]
CMD ["serve", "--addr", "0.0.0.0:7777", "--db", "sqlite:///data/agnogo.db"]
