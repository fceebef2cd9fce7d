# attnd container image: a build stage that compiles and tests, a runtime
# stage with the binary and its shared libraries only.
#
#   docker build -t attnd .                      # or: podman build -t attnd .
#   docker run --rm -p 8080:8080 attnd
#   docker run --rm -p 8080:8080 -v "$PWD/models:/models:ro" attnd \
#       --model mine=/models/mine.safetensors,heads=8
#
# `make container-test` builds and runs this file with Podman where no Docker
# engine is at hand (deploy/container-test.sh). Configuration is the ATTND_*
# environment (`attnd --help`); arguments after the image name are attnd flags.

# ---- build: compile attnd and the tests, run the tests --------------------
FROM debian:bookworm-slim AS build

# The Makefile's CHECK_DEB_PACKAGES: its TEST_DEB_PACKAGES less those only the
# browser and contract tests use (chromium, fonts, nodejs: CI runs those, not
# this build);
# tests/deploy/check_manifests.py checks that the two lists agree.
# python3-yaml embeds api/openapi.yaml as JSON in the binary.
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
        build-essential pkg-config libopenblas-dev check libjansson-dev \
        libmicrohttpd-dev libpcre2-dev libutf8proc-dev zlib1g-dev python3 python3-yaml \
 && rm -rf /var/lib/apt/lists/*

WORKDIR /src
# The whole source tree: .dockerignore keeps out build/, every node_modules/
# (the tokenizer oracle's packages alone are 400 MB), .git
# and deploy/, so editing the manifests does not rebuild the image.
COPY . .

# The suites that need neither the network nor a running daemon, run here
# against the same OpenBLAS build the runtime stage installs: the engine's
# fast paths against their naive twins, the PyTorch golden fixtures, the
# safetensors loader and the ONNX conformance cases (tests/data/).
# The commit that /metrics' attnd_build_info names: .git is not in the build
# context, so the builder passes it (deploy/container-test.sh does):
#   docker build --build-arg ATTND_COMMIT="$(git rev-parse --short HEAD)" -t attnd .
ARG ATTND_COMMIT=unknown
ARG UNIT_TESTS="engine/check_engine engine/check_fixtures engine/check_onnx \
engine/check_safetensors_format engine/check_safetensors_fixtures engine/check_safetensors_models"
RUN make -j"$(nproc)" ATTND_COMMIT="$ATTND_COMMIT" build/attnd $(for t in $UNIT_TESTS; do printf 'build/tests/%s ' "$t"; done) \
 && for t in $UNIT_TESTS; do \
        echo "== $t" && OPENBLAS_NUM_THREADS=1 "build/tests/$t" || exit 1; \
    done \
 && strip build/attnd \
 && build/attnd --version

# ---- runtime: the binary, its libraries, a non-root user -------------------
FROM debian:bookworm-slim

# libopenblas0-pthread is the OpenBLAS that libopenblas-dev linked against in
# the build stage; attnd runs it single-threaded (OPENBLAS_NUM_THREADS=1 below;
# server/main.c explains the thread model).
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
        libmicrohttpd12 libjansson4 libopenblas0-pthread libpcre2-8-0 libutf8proc2 zlib1g \
 && rm -rf /var/lib/apt/lists/* \
 && groupadd --system --gid 10001 attnd \
 && useradd --system --uid 10001 --gid 10001 --no-create-home \
        --home-dir /nonexistent --shell /usr/sbin/nologin attnd \
 && mkdir -p /models

# The OpenAPI document and the web page are embedded in the binary.
COPY --from=build /src/build/attnd /usr/local/bin/attnd
ARG ATTND_COMMIT=unknown
LABEL org.opencontainers.image.title="attnd" \
      org.opencontainers.image.revision="$ATTND_COMMIT"

# Model files: mount a directory read-only at /models and name each file with
# --model NAME=/models/FILE.safetensors,heads=H (or ATTND_MODEL, ';'-separated).
# No VOLUME instruction: it would give every container an empty anonymous
# volume there, and attnd writes nothing.
ENV OPENBLAS_NUM_THREADS=1 \
    ATTND_HOST=0.0.0.0 \
    ATTND_PORT=8080 \
    ATTND_DRAIN_SECONDS=8 \
    ATTND_LOG_FORMAT=json

# A numeric user, so that Kubernetes' runAsNonRoot can verify it.
USER 10001:10001
EXPOSE 8080
# attnd drains on SIGTERM: readiness fails, in-flight work finishes within
# ATTND_DRAIN_SECONDS, then it exits 0. 8 s ends inside `docker stop`'s
# default 10 s wait; with a longer drain, give `docker stop -t` more.
STOPSIGNAL SIGTERM
# No curl in the image: attnd probes itself. Shell form, so that a changed
# ATTND_PORT is followed.
HEALTHCHECK --interval=10s --timeout=3s --start-period=10s --retries=3 \
    CMD attnd --probe "http://127.0.0.1:${ATTND_PORT:-8080}/healthz"
ENTRYPOINT ["/usr/local/bin/attnd"]
