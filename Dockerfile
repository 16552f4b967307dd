# The server image: `providers-webhook` (subcommands serve, controller, keygen).
#   docker build -t providers-webhook:0.1.0 .
# Multi-arch (both base images are published for amd64 and arm64; each architecture is
# compiled natively, under emulation where the builder's differs):
#   docker buildx build --platform linux/amd64,linux/arm64 \
#     --build-arg VERSION=0.1.0 --build-arg REVISION="$(git rev-parse HEAD)" \
#     --build-arg CREATED="$(date -u +%Y-%m-%dT%H:%M:%SZ)" \
#     -t REGISTRY/providers-webhook:0.1.0 --push .
FROM rust:1.89-bookworm AS build
WORKDIR /src
COPY . .
RUN cargo build --profile dist --locked -p providers-webhook --bin providers-webhook

# glibc and CA certificates, no shell, non-root.
FROM gcr.io/distroless/cc-debian12:nonroot
ARG VERSION=0.1.0
ARG REVISION=unknown
ARG CREATED=unknown
LABEL org.opencontainers.image.title="providers-webhook" \
      org.opencontainers.image.description="Admission webhook and installer controller for sealed Helm installs of providers onto edge clusters" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.revision="${REVISION}" \
      org.opencontainers.image.created="${CREATED}" \
      org.opencontainers.image.licenses="Apache-2.0"
COPY --from=build /src/target/dist/providers-webhook /usr/local/bin/providers-webhook
USER 65532:65532
ENTRYPOINT ["/usr/local/bin/providers-webhook"]
