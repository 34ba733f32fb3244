# Shared helpers for scripts/*: quiet, idempotent installs and common paths.
# Source it; do not run it.

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
LOG_DIR=${MOBIUS_SCRIPT_LOGS:-${TMPDIR:-/tmp}/mobius-script-logs}
mkdir -p "$LOG_DIR"

# Cargo builds go to a shared target directory outside the clone when one is usable.
if [ -z "${CARGO_TARGET_DIR:-}" ]; then
  if mkdir -p /var/cache/mobius-target 2>/dev/null && [ -w /var/cache/mobius-target ]; then
    export CARGO_TARGET_DIR=/var/cache/mobius-target
  else
    export CARGO_TARGET_DIR="$ROOT/target"
  fi
fi
# Pinned agent CLIs (and other downloaded tools) live outside the repo.
if [ -z "${MOBIUS_TOOL_CACHE:-}" ]; then
  if [ "$CARGO_TARGET_DIR" = "$ROOT/target" ]; then
    MOBIUS_TOOL_CACHE="${XDG_CACHE_HOME:-$HOME/.cache}/mobius"
  else
    MOBIUS_TOOL_CACHE=$(dirname "$CARGO_TARGET_DIR")
  fi
fi
export MOBIUS_TOOL_CACHE
export MOBIUS_CLI_DIR=${MOBIUS_CLI_DIR:-$MOBIUS_TOOL_CACHE/mobius-agent-clis}
CLAUDE_CODE_VERSION=2.1.332
CODEX_VERSION=0.171.0

export MOBIUS_BUILD_SHA=${MOBIUS_BUILD_SHA:-$(git -C "$ROOT" rev-parse --short=12 HEAD 2>/dev/null || echo dev)}
export MOBIUS_BUILD_DATE=${MOBIUS_BUILD_DATE:-$(git -C "$ROOT" log -1 --format=%cs 2>/dev/null || date -u +%F)}

say() { printf '\033[1m==> %s\033[0m\n' "$*" >&2; }
die() { printf 'error: %s\n' "$*" >&2; exit 1; }

# quietly LABEL CMD...: runs CMD with output to a log; shows the log only on failure.
quietly() {
  local label=$1; shift
  local log="$LOG_DIR/$(echo "$label" | tr -c 'a-zA-Z0-9' '_').log"
  if ! "$@" >"$log" 2>&1; then
    printf 'error: %s failed; last lines of %s:\n' "$label" "$log" >&2
    tail -n 40 "$log" >&2
    return 1
  fi
}

as_root() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }

# ensure_apt PKG...: installs the Debian packages that are missing.
ensure_apt() {
  local missing=()
  for pkg in "$@"; do
    dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  say "installing ${missing[*]} (apt)"
  quietly "apt-get update" as_root apt-get update -qq || return 1
  quietly "apt-get install" as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}"
}

# ensure_node: Node.js 20+ and npm.
ensure_node() {
  if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
    ensure_apt nodejs npm
  fi
  local major
  major=$(node -p 'process.versions.node.split(".")[0]')
  [ "$major" -ge 20 ] || die "Node.js 20 or newer is required (found $(node --version))"
}

# ensure_npm DIR: `npm ci` in DIR unless node_modules already matches package-lock.json.
ensure_npm() {
  local dir=$1 stamp="$1/node_modules/.mobius-lock-stamp" want
  want=$(sha256sum "$dir/package-lock.json" | cut -d' ' -f1)
  if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then return 0; fi
  say "installing npm packages in ${dir#"$ROOT"/}"
  (cd "$dir" && quietly "npm ci ${dir##*/}" npm ci --no-audit --no-fund --loglevel=error) || return 1
  echo "$want" >"$stamp"
}

# ensure_agent_clis: the pinned claude and codex CLIs under $MOBIUS_CLI_DIR.
ensure_agent_clis() {
  local bin="$MOBIUS_CLI_DIR/node_modules/.bin"
  if [ -x "$bin/claude" ] && [ -x "$bin/codex" ] \
     && "$bin/claude" --version 2>/dev/null | grep -q "^$CLAUDE_CODE_VERSION " \
     && "$bin/codex" --version 2>/dev/null | grep -q "$CODEX_VERSION"; then
    return 0
  fi
  say "installing the agent CLIs (claude $CLAUDE_CODE_VERSION, codex $CODEX_VERSION) into $MOBIUS_CLI_DIR"
  mkdir -p "$MOBIUS_CLI_DIR"
  [ -f "$MOBIUS_CLI_DIR/package.json" ] || echo '{"private":true}' >"$MOBIUS_CLI_DIR/package.json"
  (cd "$MOBIUS_CLI_DIR" && quietly "npm install agent CLIs" npm install --no-audit --no-fund --loglevel=error \
    "@anthropic-ai/claude-code@$CLAUDE_CODE_VERSION" "@openai/codex@$CODEX_VERSION")
}

# The agent's toolbox, as the image installs it (the Dockerfile's runtime stage lists the same
# packages; scripts/check-deploy checks both agree).
TOOLBOX_APT=(chromium-headless-shell fonts-dejavu-core jq python3 python3-venv ripgrep sqlite3 unzip)

# ensure_toolbox: the agent's toolbox (Debian packages; a machine with another Chromium keeps
# it). Prints what could not be installed and carries on: the server lists what is there.
ensure_toolbox() {
  local want=() pkg
  for pkg in "${TOOLBOX_APT[@]}"; do
    case "$pkg" in
      chromium-headless-shell) command -v chromium-headless-shell >/dev/null || command -v chromium >/dev/null || want+=("$pkg") ;;
      *) want+=("$pkg") ;;
    esac
  done
  command -v npm >/dev/null || want+=(npm)
  ensure_apt "${want[@]}" || echo "(some of the agent's tools could not be installed: ${want[*]}; Settings › Agent sandbox lists what it has)" >&2
}

# ensure_rust: the toolchain with rustfmt and clippy.
ensure_rust() {
  command -v cargo >/dev/null || die "Rust (cargo) is required: https://rustup.rs"
  if ! cargo fmt --version >/dev/null 2>&1 || ! cargo clippy --version >/dev/null 2>&1; then
    command -v rustup >/dev/null && quietly "rustup components" rustup component add rustfmt clippy
  fi
}
