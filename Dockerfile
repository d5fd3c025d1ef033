# The Node.js images of the demo, three targets (docker-compose.yml builds them all):
#   controller  the controller (CMD): its workspace and the library's, their production dependencies only
#   cloud       the mock cloud: its workspace and its production dependencies (not the library: another program)
#   tools       the compose jobs (deploy/compose/certs.ts, setup.ts): envtest's PKI and CRD code (its build), crds/, deploy/
#
#   docker build --target controller -t shapes-controller:0.1.0 .
#
# The controller's image runs built JavaScript: the library, reconcile-kit (library/), is built here (stage
# library-build), then the controller against it (controller-build), as a project that installed the package
# would build; no .ts of the controller is in the image, and Node's type stripping is never loaded for it.
# The cloud's image runs its .ts sources directly (type stripping), and holds none of the library. Each
# image installs only the dependencies of the workspaces it runs (deploy/images/only-workspaces.ts says
# how, and why not `npm ci -w`): the controller's has no express and no better-sqlite3, the cloud's no
# reconcile-kit. better-sqlite3 ships prebuilt binaries, so no compiler is needed and npm runs no install
# scripts (--ignore-scripts).
#
# Behind a TLS-intercepting proxy (a corporate network; the machines this project is built on) `npm ci`
# fails with SELF_SIGNED_CERT_IN_CHAIN unless it trusts the proxy's CA. Give the CA bundle as the build
# secret `npm-ca` (docker-compose.yml passes $NODE_EXTRA_CA_CERTS, else an empty file):
#   docker build --secret id=npm-ca,src=/etc/ssl/certs/ca-certificates.crt --target controller .
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

# Production dependencies of one image: the root package.json cut down to its workspaces, installed at the
# versions of package-lock.json.
FROM base AS controller-deps
COPY package.json package-lock.json ./
COPY library/package.json ./library/package.json
COPY controller/package.json ./controller/package.json
COPY deploy/images/only-workspaces.ts ./deploy/images/only-workspaces.ts
RUN --mount=type=secret,id=npm-ca \
  if [ -s /run/secrets/npm-ca ]; then export NODE_EXTRA_CA_CERTS=/run/secrets/npm-ca; fi \
  && node deploy/images/only-workspaces.ts library controller \
  && npm install --omit=dev --ignore-scripts --no-audit --no-fund && npm prune --omit=dev --ignore-scripts \
  && npm cache clean --force

FROM base AS cloud-deps
COPY package.json package-lock.json ./
COPY mock-cloud/package.json ./mock-cloud/package.json
COPY deploy/images/only-workspaces.ts ./deploy/images/only-workspaces.ts
RUN --mount=type=secret,id=npm-ca \
  if [ -s /run/secrets/npm-ca ]; then export NODE_EXTRA_CA_CERTS=/run/secrets/npm-ca; fi \
  && node deploy/images/only-workspaces.ts mock-cloud \
  && npm install --omit=dev --ignore-scripts --no-audit --no-fund && npm prune --omit=dev --ignore-scripts \
  && npm cache clean --force

# Every dependency: the compose jobs use envtest's PKI code, which needs node-forge (a devDependency).
FROM base AS all-deps
COPY package.json package-lock.json ./
COPY library/package.json ./library/package.json
COPY controller/package.json ./controller/package.json
COPY mock-cloud/package.json ./mock-cloud/package.json
COPY envtest/package.json ./envtest/package.json
COPY stack/package.json ./stack/package.json
COPY examples/dns-controller/package.json ./examples/dns-controller/package.json
RUN --mount=type=secret,id=npm-ca \
  if [ -s /run/secrets/npm-ca ]; then export NODE_EXTRA_CA_CERTS=/run/secrets/npm-ca; fi \
  && npm ci --include=dev --ignore-scripts --no-audit --no-fund && npm cache clean --force

# envtest, built: its JavaScript in envtest/dist, what its package exports by default (the compose jobs run it).
FROM all-deps AS envtest-build
COPY tsconfig.json ./
COPY envtest ./envtest
RUN npx tsc -p envtest/tsconfig.build.json

# The library, built: JavaScript and declarations in library/dist, what its package exports by default. On
# envtest's build: the library's harness entry names envtest's types.
FROM envtest-build AS library-build
COPY library ./library
RUN npx tsc -p library/tsconfig.build.json

# The controller, built against the library's build: JavaScript in controller/dist, then bundled into
# controller/dist/main.js (and its lazy chunks) by esbuild, what its image runs (controller/bundle.ts says why).
FROM library-build AS controller-build
COPY controller ./controller
RUN npx tsc -p controller/tsconfig.build.json && node controller/bundle.ts

FROM base AS controller
ENV NODE_ENV=production
COPY --from=controller-deps /app/node_modules ./node_modules
COPY --from=controller-deps /app/package.json ./package.json
COPY library/package.json ./library/package.json
COPY --from=library-build /app/library/dist ./library/dist
COPY controller/package.json ./controller/package.json
COPY --from=controller-build /app/controller/dist ./controller/dist
COPY deploy/compose/http-check.ts ./deploy/compose/http-check.ts
# Mount points owned by the app's user: a named volume mounted here starts with this owner.
RUN mkdir -p /var/run/shapes && chown 1000:1000 /var/run/shapes
# Numeric: the kubelet's runAsNonRoot check cannot resolve a user name (the image's `node` is uid 1000).
USER 1000:1000
EXPOSE 8081
CMD ["node", "--max-semi-space-size=2", "--v8-pool-size=1", "--expose-gc", "controller/dist/main.js"]

FROM base AS cloud
ENV NODE_ENV=production
COPY --from=cloud-deps /app/node_modules ./node_modules
COPY --from=cloud-deps /app/package.json ./package.json
COPY mock-cloud ./mock-cloud
COPY deploy/compose/http-check.ts ./deploy/compose/http-check.ts
RUN mkdir -p /data && chown 1000:1000 /data
USER 1000:1000
EXPOSE 8080
CMD ["node", "mock-cloud/src/cli.ts"]

FROM base AS tools
COPY --from=all-deps /app/node_modules ./node_modules
COPY package.json ./
COPY envtest/package.json ./envtest/package.json
COPY --from=envtest-build /app/envtest/dist ./envtest/dist
COPY crds ./crds
COPY deploy ./deploy
RUN mkdir -p /pki /var/run/shapes && chown 1000:1000 /pki /var/run/shapes && chmod 0700 /pki
USER 1000:1000
CMD ["node", "deploy/compose/certs.ts", "--help"]
