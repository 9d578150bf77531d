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
# hit the layer cache. The binaries are built with the workspace's `image` profile (release, thin
# LTO, stripped; see Cargo.toml) by `cargo auditable`.

ARG RUST_IMAGE=rust:1.95-bookworm
# glibc: the binaries link it (aws-lc-rs), and bookworm's matches distroless' debian12.
ARG RUNTIME_IMAGE=gcr.io/distroless/cc-debian12:nonroot

FROM ${RUST_IMAGE} AS builder
# cargo-auditable embeds each binary's dependency tree (crate names, versions, sources) in a
# `.dep-v0` section, so scanners (trivy, grype, syft, cargo audit bin) can tell what a shipped binary
# contains without the repository. Pinned and --locked: the tool that links our binaries is built
# from a known dependency tree. First, so changing the workspace never reinstalls it.
ARG CARGO_AUDITABLE_VERSION=0.7.7
RUN --mount=type=cache,target=/usr/local/cargo/registry,sharing=locked \
    --mount=type=cache,target=/usr/local/cargo/git,sharing=locked \
    cargo install --locked "cargo-auditable@${CARGO_AUDITABLE_VERSION}"
WORKDIR /src

# The dependency layer: the workspace manifests and lock file only (one COPY per workspace member;
# a test in xtask/src/images.rs keeps this list equal to `cargo metadata`'s), with stub sources,
# so the crates.io dependencies compile in a layer that only a manifest or Cargo.lock change
# invalidates. Its target/ is part of the layer (no cache mount), so a CI builder exporting its
# cache (`--cache-to`) carries the compiled dependencies too.
COPY Cargo.toml Cargo.lock ./
COPY crates/faros/Cargo.toml crates/faros/
COPY crates/faros-core/Cargo.toml crates/faros-core/
COPY crates/faros-embedded-kcp/Cargo.toml crates/faros-embedded-kcp/
COPY crates/faros-hub-api/Cargo.toml crates/faros-hub-api/
COPY crates/faros-hub-reconciler/Cargo.toml crates/faros-hub-reconciler/
COPY crates/faros-runtime/Cargo.toml crates/faros-runtime/
COPY crates/faros-sdk/Cargo.toml crates/faros-sdk/
COPY crates/faros-test-support/Cargo.toml crates/faros-test-support/
COPY providers/quickstart/Cargo.toml providers/quickstart/
COPY xtask/Cargo.toml xtask/
COPY e2e/Cargo.toml e2e/
# Every member gets an empty lib.rs and main.rs (whichever its manifest names, it finds); the stubs
# are removed again so the sources copied next are the only ones.
RUN --mount=type=cache,target=/usr/local/cargo/registry,sharing=locked \
    --mount=type=cache,target=/usr/local/cargo/git,sharing=locked \
    set -eu; \
    members=$(find . -mindepth 2 -name Cargo.toml -exec dirname {} \;); \
    for member in $members; do \
        mkdir -p "$member/src"; \
        : > "$member/src/lib.rs"; \
        echo 'fn main() {}' > "$member/src/main.rs"; \
    done; \
    cargo auditable build --profile image --locked \
        -p faros -p faros-hub-api -p faros-hub-reconciler -p faros-provider-quickstart; \
    for member in $members; do rm -r "$member/src"; done

# The sources. COPY keeps the files' own modification times, which are older than the stub build
# above, so cargo would take the stub-built workspace crates for fresh: touching every workspace
# source makes them rebuild (the crates.io dependencies' sources are outside /src: they stay built).
COPY . .
RUN --mount=type=cache,target=/usr/local/cargo/registry,sharing=locked \
    --mount=type=cache,target=/usr/local/cargo/git,sharing=locked \
    find . -path ./target -prune -o -name '*.rs' -exec touch {} + \
    && cargo auditable build --profile image --locked \
        -p faros -p faros-hub-api -p faros-hub-reconciler -p faros-provider-quickstart \
    && mkdir -p /out \
    && cp target/image/faros target/image/faros-hub-api target/image/faros-hub-reconciler \
        target/image/faros-provider-quickstart /out/

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
