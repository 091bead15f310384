# One image for every service; docker-compose.yml picks the service with `command`.
FROM node:24-bookworm-slim
WORKDIR /app
ENV NODE_ENV=production HOST=0.0.0.0
COPY package.json package-lock.json tsconfig.base.json ./
COPY packages packages
COPY services services
COPY scripts scripts
# The `node` devDependency (a pinned runtime for bare machines) is not needed: the image has Node 24.
RUN npm ci --omit=dev --ignore-scripts --no-audit --no-fund && npm cache clean --force
USER node
# Node flags per service: packages/config/src/node-flags.ts.
CMD ["node", "--max-semi-space-size=4", "--heap-growing-percent=50", "services/gateway/src/main.ts"]
