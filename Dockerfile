# The server image: `providers-webhook` (subcommands serve, controller, keygen).
#   docker build -t providers-webhook:0.1.0 .
FROM rust:1.89-bookworm AS build
WORKDIR /src
COPY . .
RUN cargo build --release --locked -p providers-webhook --bin providers-webhook

# glibc and CA certificates, no shell, non-root.
FROM gcr.io/distroless/cc-debian12:nonroot
COPY --from=build /src/target/release/providers-webhook /usr/local/bin/providers-webhook
USER 65532:65532
ENTRYPOINT ["/usr/local/bin/providers-webhook"]
