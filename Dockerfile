# syntax=docker/dockerfile:1.7
# Möbius in one image: the `mobius` server, the built PWA, the libraries mini-apps are bundled
# against, the skill files, and the pinned agent CLIs (which bring their own need for Node).
# Self-hosting: see docker-compose.yml. Checked by scripts/check-deploy. Releases build it with
# `scripts/release image` (BINARY_SOURCE=prebuilt: the signed release binaries in dist/image/),
# for linux/amd64 and linux/arm64.

ARG NODE_VERSION=22
ARG RUST_VERSION=1.95
ARG DEBIAN_RELEASE=bookworm
# Where the server binary comes from: `server` compiles it below; `prebuilt` takes
# dist/image/<arch>/mobius (what scripts/release build made and package signs).
ARG BINARY_SOURCE=server

# ---- The PWA, its source and the node_modules it builds with: the shell's toolchain (the agent
# rebuilds the shell from DATA_DIR/platform/shell/ with it, `mobius shell rebuild`) and the
# libraries the bundler resolves mini-app imports in (only the pinned ones are importable).
# Plain JavaScript: built once on the build machine's platform for every target. Keeping the dev
# dependencies (vite and its plugins) costs about 211 MiB over the production ones (530 vs 319
# MiB unpacked, measured with npm prune --omit=dev); the source adds 3 MiB.
FROM --platform=$BUILDPLATFORM node:${NODE_VERSION}-${DEBIAN_RELEASE}-slim AS web
# npm's download cache lives in a build cache mount, outside the image.
ENV npm_config_cache=/var/cache/npm
WORKDIR /src/frontend
COPY frontend/package.json frontend/package-lock.json ./
RUN --mount=type=cache,target=/var/cache/npm \
    npm ci --no-audit --no-fund --loglevel=error
COPY frontend/ ./
RUN npm run build \
    && test -f dist/index.html

# ---- The agent CLIs, installed globally under one prefix. Install scripts must run:
# claude's postinstall puts its native binary in place.
FROM node:${NODE_VERSION}-${DEBIAN_RELEASE}-slim AS clis
ENV npm_config_cache=/var/cache/npm
ARG CLAUDE_CODE_VERSION=2.1.332
ARG CODEX_VERSION=0.171.0
RUN --mount=type=cache,target=/var/cache/npm \
    npm install --global --prefix /opt/agent-clis --no-audit --no-fund --loglevel=error \
        "@anthropic-ai/claude-code@${CLAUDE_CODE_VERSION}" "@openai/codex@${CODEX_VERSION}" \
    && /opt/agent-clis/bin/claude --version \
    && /opt/agent-clis/bin/codex --version

# ---- The server. The build identity reaches /api/version through build.rs.
FROM rust:${RUST_VERSION}-${DEBIAN_RELEASE} AS server
WORKDIR /src
COPY Cargo.toml Cargo.lock ./
COPY backend/ backend/
# build.rs digests the image's pins (Node, Debian, agent CLIs, app libraries): updates in place
# refuse a release that needs another image.
COPY Dockerfile ./
COPY frontend/package.json frontend/package.json
ARG MOBIUS_BUILD_SHA=dev
ARG MOBIUS_BUILD_DATE=unknown
# The release feed this build checks (scripts/release names the repository's).
ARG MOBIUS_RELEASE_FEED=https://github.com/mobius-platform/mobius/releases/latest/download/latest.json
# Lower it (e.g. 1) to build on a machine with little memory; cargo reads it from the env.
ARG CARGO_BUILD_JOBS=default
ENV MOBIUS_BUILD_SHA=${MOBIUS_BUILD_SHA} \
    MOBIUS_BUILD_DATE=${MOBIUS_BUILD_DATE} \
    MOBIUS_RELEASE_FEED=${MOBIUS_RELEASE_FEED}
RUN --mount=type=cache,target=/usr/local/cargo/registry \
    --mount=type=cache,target=/src/target \
    cargo build --release --locked -p mobius \
    && install -m 0755 target/release/mobius /usr/local/bin/mobius

# ---- A release's binary, built and signed outside (scripts/release build, package).
FROM scratch AS prebuilt
ARG TARGETARCH
COPY dist/image/${TARGETARCH}/mobius /usr/local/bin/mobius

# hadolint ignore=DL3006
FROM ${BINARY_SOURCE} AS binary

# ---- Runtime: slim Debian, an unprivileged `mobius` user, tini as PID 1.
# The server links no TLS library (rustls with built-in roots); ca-certificates is for the
# agent's tools (git over https, the CLIs). tzdata is the zone database schedules are read in
# (jiff reads /usr/share/zoneinfo; nothing is bundled in the binary); curl is how app jobs
# (bash scripts, as in the original) call the API with their APP_TOKEN.
# The agent's toolbox (scripts/lib.sh TOOLBOX_APT lists the same; Settings › Agent sandbox shows
# what is there): Python 3 with venv, sqlite3, jq, ripgrep, unzip, and Chromium's headless shell
# — the agent's eyes (`mobius app screenshot`) and its PDF path (HTML → --print-to-pdf, offline,
# no TeX distribution) — with one font family to render text in. npm/npx come from the web stage.
FROM debian:${DEBIAN_RELEASE}-slim AS runtime
# Debian's packages stay at the release's current security updates; no version pins.
# hadolint ignore=DL3008
RUN apt-get update \
    && apt-get install -y --no-install-recommends ca-certificates curl git tini tzdata \
        chromium-headless-shell fonts-dejavu-core jq python3 python3-venv ripgrep sqlite3 unzip \
    && rm -rf /var/lib/apt/lists/*
COPY --from=web /usr/local/bin/node /usr/local/bin/node
COPY --from=web /usr/local/lib/node_modules/npm /usr/local/lib/node_modules/npm
RUN ln -s ../lib/node_modules/npm/bin/npm-cli.js /usr/local/bin/npm \
    && ln -s ../lib/node_modules/npm/bin/npx-cli.js /usr/local/bin/npx \
    && groupadd --system --gid 10001 mobius \
    && useradd --system --uid 10001 --gid mobius --create-home --home-dir /home/mobius \
        --shell /bin/bash mobius \
    && mkdir -p /data \
    && chown mobius:mobius /data \
    && chmod 0750 /data
COPY --from=clis /opt/agent-clis /opt/agent-clis
COPY --from=web /src/frontend /app/frontend
COPY skill/ /app/skill/
COPY --from=binary /usr/local/bin/mobius /usr/local/bin/mobius

ENV LANG=C.UTF-8 \
    PATH=/opt/agent-clis/bin:${PATH} \
    DATA_DIR=/data \
    MOBIUS_BIND=0.0.0.0:8000 \
    MOBIUS_FRONTEND_DIR=/app/frontend/dist \
    MOBIUS_SKILL_DIR=/app/skill \
    MOBIUS_APP_NODE_MODULES=/app/frontend/node_modules \
    MOBIUS_APP_RUNTIME_DIR=/app/frontend/dist \
    MOBIUS_SHELL_SOURCE=/app/frontend \
    MOBIUS_SHELL_NODE_MODULES=/app/frontend/node_modules \
    MOBIUS_CLAUDE_BIN=/opt/agent-clis/bin/claude \
    MOBIUS_CODEX_BIN=/opt/agent-clis/bin/codex

WORKDIR /app
# Numeric, so a host or orchestrator can tell it is not root without reading /etc/passwd.
USER 10001:10001
VOLUME ["/data"]
EXPOSE 8000
HEALTHCHECK --interval=30s --timeout=10s --start-period=20s --retries=3 \
    CMD ["mobius", "healthcheck"]
ENTRYPOINT ["/usr/bin/tini", "--"]
# The launcher: runs the newest good version (an update applied from Settings lives in
# /data/platform/releases; this image's binary is always the fallback) and rolls back one that
# does not become ready.
CMD ["mobius", "launch"]
