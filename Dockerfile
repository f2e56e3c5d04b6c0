# One image for every process of the fleet; docker-compose.yml picks the npm script.
FROM node:20-bookworm-slim
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY . .
ENV NODE_ENV=production
CMD ["npm", "run", "worker"]
