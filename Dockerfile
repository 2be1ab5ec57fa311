# syntax=docker/dockerfile:1
#
# The taskgate container image.
#
#   docker build -t taskgate .
#   docker run --rm -p 8080:8080 -p 9090:9090 \
#     -v "$PWD/policy.yaml:/etc/taskgate/taskgate.yaml:ro" taskgate
#   docker run --rm -v "$PWD/policy.yaml:/etc/taskgate/taskgate.yaml:ro" taskgate \
#     check-config /etc/taskgate/taskgate.yaml
#
# The policy is read from /etc/taskgate/taskgate.yaml (mount it there, read-only). Inside a
# container the policy must bind both listeners to all interfaces (listen.host 0.0.0.0, the
# default, and admin.host 0.0.0.0, which is NOT the default) or nothing outside the container
# reaches them. Secrets reach ${NAME} in the policy as environment variables (docker run -e,
# or Kubernetes secretKeyRef; see helm/taskgate and docs/deploy-*.md).
#
# Base image: Node.js 24 (LTS line "Krypton", supported until 2028-04-30). Node 20 reached end
# of life on 2026-04-30, and a runtime dependency (cookie@2, through fastify's
# light-my-request) already declares node >= 22. 24 is the newest LTS line the project states
# compatibility with (README); 26 is a later LTS that nothing here has been tested on. Debian
# bookworm "slim": glibc, no compilers, no curl. Pin a digest in production builds:
#   docker build --build-arg NODE_IMAGE=node:24-bookworm-slim@sha256:... .
ARG NODE_IMAGE=node:24-bookworm-slim

# ---- build: install every dependency from the lockfile, compile, drop dev dependencies ----
FROM ${NODE_IMAGE} AS build
WORKDIR /app
# Lockfile first, so the dependency layer is reused until package*.json change.
# --ignore-scripts: no dependency needs an install script to build or run taskgate
# (the only one in the lockfile is esbuild's, a dev dependency used by tsx, not by tsc).
COPY package.json package-lock.json ./
RUN --mount=type=cache,target=/root/.npm \
    npm ci --ignore-scripts --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json ./
COPY src ./src
# `npm run build` compiles src/ to dist/src/ (tsconfig.build.json); the prune leaves only
# the runtime dependencies in node_modules.
RUN npm run build \
 && npm prune --omit=dev --ignore-scripts --no-audit --no-fund

# ---- runtime: Node, the compiled gateway, its runtime dependencies; nothing else ----
FROM ${NODE_IMAGE} AS runtime
LABEL org.opencontainers.image.title="taskgate" \
      org.opencontainers.image.description="MCP task gateway: a Streamable HTTP reverse proxy that owns MCP tasks" \
      org.opencontainers.image.licenses="Apache-2.0"
ENV NODE_ENV=production \
    TASKGATE_HEALTHCHECK_URL=http://127.0.0.1:9090/healthz
WORKDIR /app
# Owned by root and read-only for the runtime user: the process cannot change its own code.
COPY --from=build /app/package.json ./package.json
COPY --from=build /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
# Example policies and the JSON Schema, for `check-config config/minimal.yaml` and editors.
COPY config ./config
# The documented policy path; mount the policy file (or a ConfigMap) here.
RUN mkdir -p /etc/taskgate

# The official image's unprivileged "node" user, by number: Kubernetes can verify
# runAsNonRoot only for a numeric user.
USER 1000:1000

# listen.port (client-facing proxy) and admin.port (/healthz, /readyz, /metrics): the defaults.
EXPOSE 8080 9090

# No curl in a slim image: Node's own fetch. 127.0.0.1 reaches the admin listener whether it
# binds 0.0.0.0 or loopback; if the policy moves admin.port, set TASKGATE_HEALTHCHECK_URL.
# (Kubernetes ignores HEALTHCHECK and uses the chart's probes instead.)
HEALTHCHECK --interval=15s --timeout=5s --start-period=10s --retries=3 \
  CMD ["node", "-e", "fetch(process.env.TASKGATE_HEALTHCHECK_URL,{signal:AbortSignal.timeout(4000)}).then(r=>process.exit(r.ok?0:1),()=>process.exit(1))"]

# SIGTERM (docker stop, Kubernetes) drains in-flight requests within limits.drainTimeout.
# taskgate handles SIGTERM and SIGINT itself and starts no child processes, so it runs as
# PID 1 without an init.
STOPSIGNAL SIGTERM
ENTRYPOINT ["node", "dist/src/main.js"]
CMD ["--config", "/etc/taskgate/taskgate.yaml"]
