# syntax=docker/dockerfile:1.7
#
# The faros container images, one target per component (see docs/images.md):
#
#   faros-kcp                  the embedded kcp alone (`faros kcp`)
#   faros-hub-api              the hub's front door
#   faros-hub-reconciler       bootstraps root:faros:* and provisions Providers
#   faros-provider-quickstart  the reference provider, with its schemas and CatalogEntry baked in
#
# Build them with `cargo xtask images` (`--dry-run` prints the exact commands). Every target shares
# the one `builder` stage, so building all four targets runs `cargo build` once: the later builds
# hit the layer cache.

ARG RUST_IMAGE=rust:1.95-bookworm
# glibc: the binaries link it (aws-lc-rs), and bookworm's matches distroless' debian12.
ARG RUNTIME_IMAGE=gcr.io/distroless/cc-debian12:nonroot

FROM ${RUST_IMAGE} AS builder
WORKDIR /src
COPY . .
# The cache mounts keep the registry and target dir between builds; they are not part of the
# layer, so the binaries are copied out to /out.
RUN --mount=type=cache,target=/usr/local/cargo/registry,sharing=locked \
    --mount=type=cache,target=/usr/local/cargo/git,sharing=locked \
    --mount=type=cache,target=/src/target,sharing=locked \
    cargo build --release --locked \
        -p faros -p faros-hub-api -p faros-hub-reconciler -p faros-provider-quickstart \
    && mkdir -p /out \
    && cp target/release/faros target/release/faros-hub-api target/release/faros-hub-reconciler \
        target/release/faros-provider-quickstart /out/

# What every image shares: the base, the non-root user and the OCI labels that do not depend on
# the component. Nothing this file adds is writable by that user (COPY makes root-owned files), so
# the images run with a read-only root filesystem; state lives on mounted volumes.
FROM ${RUNTIME_IMAGE} AS runtime
ARG VERSION=dev
ARG REVISION=unknown
LABEL org.opencontainers.image.source="https://github.com/faroshq/faros-rs" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.revision="${REVISION}" \
      org.opencontainers.image.licenses="Apache-2.0"
USER 65532:65532

FROM runtime AS faros-kcp
LABEL org.opencontainers.image.title="faros-kcp" \
      org.opencontainers.image.description="The faros embedded kcp: a kcp-compatible API server in one process (faros kcp)."
COPY --from=builder /out/faros /usr/local/bin/faros
ENTRYPOINT ["/usr/local/bin/faros", "kcp"]

FROM runtime AS faros-hub-api
LABEL org.opencontainers.image.title="faros-hub-api" \
      org.opencontainers.image.description="The faros hub API: catalog, heartbeats, provider proxies, kcp pass-through, tenancy, MCP federation."
COPY --from=builder /out/faros-hub-api /usr/local/bin/faros-hub-api
ENTRYPOINT ["/usr/local/bin/faros-hub-api"]

FROM runtime AS faros-hub-reconciler
LABEL org.opencontainers.image.title="faros-hub-reconciler" \
      org.opencontainers.image.description="The faros hub reconciler: bootstraps the root:faros workspace tree and provisions Providers."
COPY --from=builder /out/faros-hub-reconciler /usr/local/bin/faros-hub-reconciler
ENTRYPOINT ["/usr/local/bin/faros-hub-reconciler"]

FROM runtime AS faros-provider-quickstart
LABEL org.opencontainers.image.title="faros-provider-quickstart" \
      org.opencontainers.image.description="The faros reference provider: Greeting API, controller, backend, MCP tools and UI."
# The UI assets are compiled into the binary; `init` reads the schemas and the CatalogEntry from disk.
COPY providers/quickstart/schemas/*.yaml /etc/faros/schemas/
COPY providers/quickstart/manifest.yaml /etc/faros/catalogentry/catalogentry.yaml
ENV FAROS_SCHEMAS_DIR=/etc/faros/schemas \
    FAROS_CATALOGENTRY_FILE=/etc/faros/catalogentry/catalogentry.yaml
COPY --from=builder /out/faros-provider-quickstart /usr/local/bin/faros-provider-quickstart
ENTRYPOINT ["/usr/local/bin/faros-provider-quickstart"]
