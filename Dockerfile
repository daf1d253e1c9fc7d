# The service image. With CLICKHOUSE_URL set (as docker-compose.yml does) it talks to a ClickHouse
# server; without it, it runs the embedded engine in /data/clickhouse.
FROM node:20-bookworm-slim AS build
WORKDIR /app
# better-sqlite3 compiles from source when no prebuilt binary matches.
RUN apt-get update && apt-get install -y --no-install-recommends python3 make g++ && rm -rf /var/lib/apt/lists/*
COPY package.json package-lock.json ./
RUN npm ci
COPY tsconfig.json ./
COPY src ./src
COPY scripts ./scripts
COPY test ./test
COPY schema ./schema
COPY dashboard ./dashboard
RUN npm run build && npm prune --omit=dev

FROM node:20-bookworm-slim
WORKDIR /app
ENV NODE_ENV=production HOST=0.0.0.0 PORT=8080 DATA_DIR=/data
# libuv's pool runs every embedded ClickHouse query, each holding a thread for its whole run: 8, not
# 4, leaves the loader's inserts and the service's reads threads beside BI_MAX_CONCURRENT_QUERIES
# running BI queries. Read once, when the pool starts (before main.ts runs): only the environment works.
ENV UV_THREADPOOL_SIZE=8
# One V8 background thread (Node's default is 4) for the collector's and the compiler's work: on 2
# cores, one thread costs 0.82 of the CPU per ingested record that four do with 100 policies, 0.92
# without (docs/performance.md, "V8's thread pool"). Also read before main.ts runs. On a machine of
# many cores, set NODE_OPTIONS=--v8-pool-size=4 or more.
ENV NODE_OPTIONS=--v8-pool-size=1
COPY --from=build /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
COPY package.json ./
COPY schema ./schema
# The API documentation page (/docs).
COPY public ./public
VOLUME ["/data"]
EXPOSE 8080
# Liveness, not readiness: what acts on an unhealthy container (Swarm, autoheal) restarts it, and a
# restart fixes a process that stopped answering, never a ClickHouse outage, a full backlog or a full
# disk (it would only interrupt the drain). A load balancer's check should use /healthz (readiness).
HEALTHCHECK --interval=10s --timeout=3s --start-period=20s CMD node -e "fetch('http://127.0.0.1:'+(process.env.PORT||8080)+'/livez').then(r=>process.exit(r.ok?0:1)).catch(()=>process.exit(1))"
CMD ["node", "dist/src/main.js"]
