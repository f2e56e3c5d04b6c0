# One image for every process of the fleet; docker-compose.yml picks the process. Processes run under node
# itself, not npm: npm hands SIGTERM to a shell that dies without passing it on, and the worker would never
# drain (docs/operations.md). `--import tsx` loads TypeScript in the same process: no loader child either.
# Node 24: the current LTS (Node 20 reached its end of life on 2026-04-30); CI runs the tests on both.
FROM node:24-bookworm-slim
WORKDIR /app
COPY package.json package-lock.json ./
# The lock file names the client package as a workspace: npm ci needs its package.json too.
COPY packages/client/package.json packages/client/
RUN npm ci --no-audit --no-fund
COPY . .
ENV NODE_ENV=production
# The worker's V8 flags: src/worker/worker-node-flags.ts.
CMD ["node", "--max-semi-space-size=64", "--import", "tsx", "workers/agent-worker.ts"]
