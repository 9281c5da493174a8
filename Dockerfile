# cdn-exporter image: build with dev dependencies, ship production dependencies and dist/src only.
#   docker build -t cdn-exporter:0.1.0 .
#   docker run --rm -p 9877:9877 -e CDN_API_URL=... -e CDN_API_TOKEN=... -e CDN_ACCOUNTS=acme cdn-exporter:0.1.0
# The port (9877) is the chart's `port` value (helm/cdn-exporter/values.yaml); test/deploy checks they agree.
# No `# syntax=` line: the builder's own Dockerfile frontend builds this file, so a build pulls no frontend image.

# A full reference (registry/repository:tag): it is also the org.opencontainers.image.base.name label, as given.
ARG NODE_IMAGE=docker.io/library/node:24.21.0-bookworm-slim

FROM ${NODE_IMAGE} AS build
WORKDIR /app
COPY package.json package-lock.json ./
# --ignore-scripts: the one install script among the dependencies is the `node` devDependency's, which fetches the
# Node 24 that the npm scripts run on where the machine's Node is older; the image's own Node is that Node already.
RUN npm ci --ignore-scripts --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json ./
COPY src ./src
# tsconfig.build.json compiles bench/ too; only dist/src leaves this stage.
COPY bench ./bench
RUN npm run build

# Production dependencies, from the lockfile, in a stage of their own: the runtime stage copies node_modules and
# runs no npm.
FROM ${NODE_IMAGE} AS deps
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --ignore-scripts --no-audit --no-fund

FROM ${NODE_IMAGE} AS runtime
# Declared again: an ARG before the first FROM is not visible inside a stage (the label below needs it).
ARG NODE_IMAGE
ARG VERSION=0.1.0
# Debian bookworm's tini (`apt-cache policy tini`), pinned so a rebuild installs the same binary.
ARG TINI_VERSION=0.19.0-1+b3
LABEL org.opencontainers.image.title="cdn-exporter" \
      org.opencontainers.image.description="Prometheus exporter for a CDN's traffic, network-DVR and recording-settings APIs" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.licenses="Apache-2.0" \
      org.opencontainers.image.base.name="${NODE_IMAGE}"
# tini is PID 1: it forwards SIGTERM to node and reaps zombies (the same as `docker run --init`).
# The base image's package managers (npm, npx, corepack, yarn) go: nothing in this image runs them.
RUN apt-get update \
 && apt-get install -y --no-install-recommends "tini=${TINI_VERSION}" \
 && rm -rf /var/lib/apt/lists/* \
 && rm -rf /usr/local/lib/node_modules/npm /usr/local/bin/npm /usr/local/bin/npx \
           /usr/local/lib/node_modules/corepack /usr/local/bin/corepack \
           /opt/yarn-v* /usr/local/bin/yarn /usr/local/bin/yarnpkg
ENV NODE_ENV=production
# glibc keeps the pages of large transient buffers (20 MB answers, rendered texts) in its arenas: at 1M series this
# cut the steady RSS by 150-200 MB (docs/operations.md, Memory and the process benchmark).
ENV MALLOC_ARENA_MAX=2 MALLOC_MMAP_THRESHOLD_=32768
WORKDIR /app
# package.json: "type": "module" for dist/src, and the version the exporter reports.
COPY package.json ./
COPY --from=deps /app/node_modules ./node_modules
COPY --from=build /app/dist/src ./dist/src
COPY LICENSE ./
# The state file's default home; mount a volume here to keep window cursors across container restarts.
RUN mkdir -p /var/lib/cdn-exporter && chown node:node /var/lib/cdn-exporter
# The image's `node` user, by number: Kubernetes' runAsNonRoot can check a numeric user without runAsUser.
USER 1000:1000
EXPOSE 9877
# No shell tools needed: node's own fetch. Exit 0 only on a 2xx from /healthz.
HEALTHCHECK --interval=30s --timeout=5s --start-period=20s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:9877/healthz').then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]
ENTRYPOINT ["/usr/bin/tini", "--"]
CMD ["node", "dist/src/cli.js", "run", "--web.listen-address", ":9877"]
