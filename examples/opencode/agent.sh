#!/bin/sh
# opencode as a finenvs harness agent program, one decision per run:
#   finenvs harness --model-proxy UPSTREAM_URL --agent-cmd 'examples/opencode/agent.sh {prompt_file}'
# The harness sets FINENVS_MCP_URL (the episode's MCP server) and FINENVS_MODEL_URL (its model proxy);
# opencode.json beside this script reads both. Set OPENCODE to the opencode executable if it is not on PATH.
here=$(cd "$(dirname "$0")" && pwd)
export OPENCODE_CONFIG="$here/opencode.json" OPENCODE_DISABLE_PROJECT_CONFIG=1 OPENCODE_DISABLE_MODELS_FETCH=1 \
       OPENCODE_DISABLE_AUTOUPDATE=1 OPENCODE_DISABLE_LSP_DOWNLOAD=1 OPENCODE_DISABLE_SHARE=1 \
       OPENCODE_DISABLE_CLAUDE_CODE=1 OPENCODE_DISABLE_DEFAULT_PLUGINS=1
# OPENCODE_FLAGS: more options of opencode run (e.g. --print-logs --log-level DEBUG)
exec "${OPENCODE:-opencode}" run ${OPENCODE_FLAGS:-} "$(cat "$1")"
