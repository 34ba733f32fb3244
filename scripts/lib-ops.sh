# shellcheck shell=bash
# Shared by the self-hosting scripts (backup, restore, first-run-url, update): how to reach
# the deployment, either the docker compose one or a local DATA_DIR. Source after lib.sh.

COMPOSE_FILE_PATH="$ROOT/docker-compose.yml"

# compose ARGS...: docker compose on this checkout's compose file (DOMAIN from .env or env).
compose() {
  docker compose --project-directory "$ROOT" -f "$COMPOSE_FILE_PATH" "$@"
}

have_compose() { command -v docker >/dev/null && docker compose version >/dev/null 2>&1; }

require_compose() {
  have_compose || die "docker compose is not available here (install Docker Engine with the compose plugin)"
  [ -n "${DOMAIN:-}" ] || grep -q '^DOMAIN=.' "$ROOT/.env" 2>/dev/null \
    || die "DOMAIN is not set: put DOMAIN=your.domain in $ROOT/.env"
}

# True when the compose deployment's app container is running.
compose_app_running() {
  have_compose || return 1
  [ -n "${DOMAIN:-}" ] || grep -q '^DOMAIN=.' "$ROOT/.env" 2>/dev/null || return 1
  [ -n "$(compose ps --status running -q app 2>/dev/null)" ]
}

# deploy_mode FLAG: "compose" or "local", from --compose/--local or else what is running.
deploy_mode() {
  case "${1:-}" in
    --compose) echo compose ;;
    --local) echo local ;;
    *) if compose_app_running; then echo compose; else echo local; fi ;;
  esac
}

# The mobius binary for local mode: $MOBIUS_BIN, a release or debug build, or PATH.
mobius_bin() {
  local candidate
  for candidate in "${MOBIUS_BIN:-}" "$CARGO_TARGET_DIR/release/mobius" "$CARGO_TARGET_DIR/debug/mobius" \
    "$(command -v mobius 2>/dev/null || true)"; do
    if [ -n "$candidate" ] && [ -x "$candidate" ]; then
      echo "$candidate"
      return 0
    fi
  done
  die "no mobius binary: build it (cargo build --release -p mobius) or set MOBIUS_BIN"
}

# The domain of the compose deployment ($DOMAIN, else .env).
deploy_domain() {
  if [ -n "${DOMAIN:-}" ]; then echo "$DOMAIN"; return; fi
  sed -n 's/^DOMAIN=//p' "$ROOT/.env" 2>/dev/null | tail -n 1 | tr -d "\"' \r"
}

# wait_app_ready SECONDS: polls the app container's readiness.
wait_app_ready() {
  local deadline=$((SECONDS + $1))
  until compose exec -T app mobius healthcheck >/dev/null 2>&1; do
    [ $SECONDS -lt "$deadline" ] || return 1
    sleep 2
  done
}
