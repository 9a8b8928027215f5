# doubleagent as a staging sidecar.
#   docker build -t doubleagent .
#   docker run -p 7070:7070 -e DOUBLEAGENT_ADMIN_TOKEN=change-me -v "$PWD/scenarios:/scenarios:ro" \
#     doubleagent serve /scenarios/lost-response.toml --listen 0.0.0.0:7070
# A2A agents over gRPC: add `--grpc-listen 0.0.0.0:7071` and `-p 7071:7071` (without it the gRPC
# listener takes a free port).

# --- build: a release binary from the locked dependency set ---------------------------------------
FROM rust:1-slim-bookworm AS build
# jemalloc (the binary's allocator) is built from source by its crate, with `make`.
RUN apt-get update \
 && apt-get install -y --no-install-recommends make \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY Cargo.toml Cargo.lock build.rs ./
COPY proto ./proto
COPY src ./src
COPY scenarios ./scenarios
COPY examples ./examples
RUN cargo build --release --locked --bin doubleagent \
 && strip target/release/doubleagent

# --- runtime: just the binary, as a non-root user -------------------------------------------------
FROM debian:bookworm-slim
RUN useradd --system --uid 10001 --no-create-home --shell /usr/sbin/nologin doubleagent \
 && mkdir -p /scenarios /var/lib/doubleagent \
 && chown doubleagent /var/lib/doubleagent
COPY --from=build /src/target/release/doubleagent /usr/local/bin/doubleagent
COPY scenarios /scenarios
USER doubleagent
# The default command's HTTP port. gRPC (A2A) listens only when an agent serves it, at a free port
# unless given `--grpc-listen 0.0.0.0:7071` (then publish 7071 too).
EXPOSE 7070
VOLUME ["/scenarios", "/var/lib/doubleagent"]
# The binary probes itself: no extra HTTP client in the image. It probes port 7070: serving on
# another --listen port, override it (`docker run --health-cmd 'doubleagent probe --url
# http://127.0.0.1:PORT'`, or `healthcheck:` in compose).
HEALTHCHECK --interval=10s --timeout=3s --start-period=2s --retries=3 \
  CMD ["doubleagent", "probe", "--url", "http://127.0.0.1:7070"]
ENTRYPOINT ["doubleagent"]
# Without a token on 0.0.0.0 doubleagent refuses to start: pass DOUBLEAGENT_ADMIN_TOKEN
# (or add --insecure-admin on a private network).
CMD ["serve", "--listen", "0.0.0.0:7070"]
