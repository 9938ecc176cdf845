# Two stages: build with the dev dependencies, run with only the production ones, as a non-root user, on Node 24
# (long-term support, in maintenance until 30 April 2028). Node 26, LTS since October 2026, was measured against it:
# no nearer the transport's floor and about 6 MiB more resident (docs/performance.md, "Settings the image uses").
FROM node:24-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json ./
COPY src ./src
RUN npm run build && npm prune --omit=dev --no-audit --no-fund

FROM node:24-bookworm-slim
ENV NODE_ENV=production
# A small young generation and a bounded old one: in a cluster about 90 MiB resident idle and 115 MiB under sustained
# load (docs/performance.md, "Settings the image uses").
ENV NODE_OPTIONS="--max-semi-space-size=4 --max-old-space-size=128"
WORKDIR /app
COPY --from=build /app/package.json ./
COPY --from=build /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
COPY examples ./examples
# The base image's "node" user, by number, so that runAsNonRoot can be verified without a runAsUser.
USER 1000:1000
# V8's code for every module, compiled here once and read at each start instead of compiled again, so that the server
# listens sooner after it starts (docs/performance.md). Node keeps the cache per user and
# checks it against the files and the flags, so it is made by the user and with the NODE_OPTIONS that run the server,
# in that user's home; a read-only root filesystem reads it and writes nothing.
ENV NODE_COMPILE_CACHE=/home/node/.cache/node-compile-cache
RUN node --input-type=module -e "import { readdirSync } from 'node:fs'; for (const f of readdirSync('dist', { recursive: true })) if (f.endsWith('.js') && f !== 'cli/main.js') await import('./dist/' + f); await import('prom-client');" && node dist/cli/main.js --version
EXPOSE 8443 9995
# Node runs as PID 1 directly (not through npm) so that it receives SIGTERM and shuts down gracefully.
ENTRYPOINT ["node", "dist/cli/main.js"]
CMD ["serve", "--tls-dir", "/var/run/proxy-injector/tls"]
