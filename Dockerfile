# The service's image. One image, several processes: the HTTP API by default, and by command the
# worker, the migrations, orders-cli and orders-mcp (docs/production.md, "The container image").
#
#   docker build -t exactly-once-orders .    (or podman build; --build-arg NODE_IMAGE=… for another base)
#
# NODE_IMAGE serves both stages: any Debian-based Node.js image with npm and a `node` user (uid 1000).
ARG NODE_IMAGE=node:24-bookworm-slim
# The release this image is: package.json's version (a test keeps them equal). The OCI labels below
# name it; deploy/kubernetes/kustomization.yaml tags the image with it.
ARG VERSION=0.1.0

FROM ${NODE_IMAGE} AS build
WORKDIR /app
COPY package.json package-lock.json ./
# No install scripts: they fetch the Temporal CLI and the test tools from PyPI, which neither the
# build nor the image needs, and the base has no Python. The build generates the Prisma client.
RUN npm ci --ignore-scripts --no-audit --no-fund
COPY . .
# The release, as a host would receive it (docs/production.md, "Release build"): what npm pack
# makes of the build (package.json's `files`), beside the lockfile.
RUN npm run build \
 && npm pack --pack-destination /tmp \
 && mkdir /release \
 && tar -xzf /tmp/exactly-once-orders-*.tgz -C /release --strip-components=1 \
 && cp package-lock.json /release/

FROM ${NODE_IMAGE}
ARG VERSION
LABEL org.opencontainers.image.title="exactly-once-orders" \
      org.opencontainers.image.description="Submit orders exactly once: OA approvals and AI-agent tool calls start Temporal workflows that write each order once" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.licenses="MIT"
# production: the bins run the built dist/, whose source maps turn a stack trace's lines back into
# the TypeScript's. A container is reached from outside, so the HTTP API and the worker's probes
# listen on every interface; metrics stay opt-in (METRICS_HOST). The release's bill of materials is
# dist/sbom.cdx.json.
ENV NODE_ENV=production \
    NODE_OPTIONS=--enable-source-maps \
    HOST=0.0.0.0 \
    WORKER_HEALTH_HOST=0.0.0.0
WORKDIR /app
COPY package.json package-lock.json ./
# As a host installs the release, with --omit=optional (the Prisma CLI and TypeScript are optional
# peers of the Prisma client, which npm installs otherwise) and without scripts: the package's one
# script, its postinstall, has nothing to do in a production install. The Temporal SDK's native
# core comes built for five platforms; the image keeps the one it runs on.
RUN npm ci --omit=dev --omit=optional --ignore-scripts --no-audit --no-fund \
 && npm cache clean --force \
 && keep="$(node -p "require('@temporalio/core-bridge/common.js').getPrebuiltTargetName()")" \
 && find node_modules/@temporalio/core-bridge/releases -mindepth 1 -maxdepth 1 ! -name "$keep" -exec rm -rf {} +
COPY --from=build /release/ ./
# The bins by their names, as `npm install -g` would link them.
RUN ln -s /app/bin/orders-cli.mjs /usr/local/bin/orders-cli \
 && ln -s /app/bin/orders-mcp.mjs /usr/local/bin/orders-mcp
# The code stays root's and read-only; the processes run as the base's unprivileged user.
USER node
EXPOSE 3000
# Exec form: node is PID 1 and receives SIGTERM itself, which starts the drain.
CMD ["node", "dist/app/api-main.js"]
