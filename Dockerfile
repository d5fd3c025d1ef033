# The Node.js images of the demo, two targets (docker-compose.yml builds both):
#   runtime  the controller (CMD) and the mock cloud: production dependencies and their sources only
#   tools    the compose jobs (deploy/compose/certs.ts, setup.ts): envtest's PKI and CRD code, crds/, deploy/
#
#   docker build --target runtime -t shapes-controller:0.1.0 .
#
# Node 24 runs the controller's and the cloud's .ts sources directly (type stripping). The library they are
# built on, reconcile-kit (library/), is a package: it is built to JavaScript here (stage library-build) and
# the runtime image runs that build, as a project that installed the package would. better-sqlite3 ships prebuilt binaries, so no compiler is needed and npm
# runs no install scripts (--ignore-scripts).
#
# Behind a TLS-intercepting proxy (a corporate network; the machines this project is built on) `npm ci`
# fails with SELF_SIGNED_CERT_IN_CHAIN unless it trusts the proxy's CA. Give the CA bundle as the build
# secret `npm-ca` (docker-compose.yml passes $NODE_EXTRA_CA_CERTS, else an empty file):
#   docker build --secret id=npm-ca,src=/etc/ssl/certs/ca-certificates.crt --target runtime .
# A secret is mounted for its RUN only, never written to a layer. This needs BuildKit (docker compose and
# docker buildx use it), the reason for no `# syntax=` line: one makes BuildKit fetch a frontend image from
# Docker Hub, which a machine without a registry cannot; the built-in frontend knows RUN --mount.
#
# Pinned by exact tag, the same Node as scripts/node24.sh (deploy/compose.test.ts checks both). Not by
# digest: this repository is written where no registry is reachable, so no digest could be verified; pin
# one where you build (`docker buildx imagetools inspect node:24.21.0-bookworm-slim`) and write FROM
# node:24.21.0-bookworm-slim@sha256:<digest>; the test accepts that form.

FROM node:24.21.0-bookworm-slim AS base
WORKDIR /app

# Production dependencies only: what the controller and the cloud import.
FROM base AS prod-deps
COPY package.json package-lock.json ./
COPY library/package.json ./library/package.json
RUN --mount=type=secret,id=npm-ca \
  if [ -s /run/secrets/npm-ca ]; then export NODE_EXTRA_CA_CERTS=/run/secrets/npm-ca; fi \
  && npm ci --omit=dev --ignore-scripts --no-audit --no-fund && npm cache clean --force

# Every dependency: the compose jobs use envtest's PKI code, which needs node-forge (a devDependency).
FROM base AS all-deps
COPY package.json package-lock.json ./
COPY library/package.json ./library/package.json
RUN --mount=type=secret,id=npm-ca \
  if [ -s /run/secrets/npm-ca ]; then export NODE_EXTRA_CA_CERTS=/run/secrets/npm-ca; fi \
  && npm ci --include=dev --ignore-scripts --no-audit --no-fund && npm cache clean --force

# The library, built: JavaScript and declarations in library/dist, what its package exports by default.
FROM all-deps AS library-build
COPY tsconfig.json ./
COPY library ./library
RUN npx tsc -p library/tsconfig.build.json

FROM base AS runtime
ENV NODE_ENV=production
COPY --from=prod-deps /app/node_modules ./node_modules
COPY package.json ./
COPY library/package.json ./library/package.json
COPY --from=library-build /app/library/dist ./library/dist
COPY controller ./controller
COPY mock-cloud ./mock-cloud
COPY deploy/compose/http-check.ts ./deploy/compose/http-check.ts
# Mount points owned by the app's user: a named volume mounted here starts with this owner.
RUN mkdir -p /data /var/run/shapes && chown 1000:1000 /data /var/run/shapes
# Numeric: the kubelet's runAsNonRoot check cannot resolve a user name (the image's `node` is uid 1000).
USER 1000:1000
EXPOSE 8080 8081
CMD ["node", "--max-semi-space-size=2", "controller/src/main.ts"]

FROM base AS tools
COPY --from=all-deps /app/node_modules ./node_modules
COPY package.json ./
COPY envtest/src ./envtest/src
COPY crds ./crds
COPY deploy ./deploy
RUN mkdir -p /pki /var/run/shapes && chown 1000:1000 /pki /var/run/shapes && chmod 0700 /pki
USER 1000:1000
CMD ["node", "deploy/compose/certs.ts", "--help"]
