# Stand-in for node:24.21.0-bookworm-slim, built by `npm run images` (deploy/images/stand-ins.ts) where no
# container registry can be reached. What the Dockerfile at the repository root relies on, as upstream has
# it: Debian bookworm, node, npm and npx on PATH in /usr/local/bin, and a user `node` with uid and gid 1000.
#
# The base is a debootstrapped bookworm (minbase), imported under BASE; the build context holds the Node
# binary that scripts/node24.sh takes from the npm registry (bin/node) and npm's own package (npm/).
ARG BASE
FROM ${BASE}
RUN groupadd --gid 1000 node && useradd --uid 1000 --gid node --shell /bin/bash --create-home node
COPY bin/node /usr/local/bin/node
COPY npm /usr/local/lib/node_modules/npm
RUN ln -s ../lib/node_modules/npm/bin/npm-cli.js /usr/local/bin/npm \
  && ln -s ../lib/node_modules/npm/bin/npx-cli.js /usr/local/bin/npx \
  && node --version && npm --version
ARG NODE_VERSION
ENV NODE_VERSION=${NODE_VERSION}
CMD ["node"]
