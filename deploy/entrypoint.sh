#!/bin/sh
# Container entrypoint: make sure the writable folders exist, then run the service's command.
# Configuration comes from the environment (see docs/deployment.md); secrets arrive as files
# named by *_FILE variables, which gagar_site/env.py reads.
set -eu
mkdir -p "${GAGAR_VAR_DIR:-/var/lib/gagar}"
if [ -n "${TMPDIR:-}" ]; then mkdir -p "$TMPDIR"; fi
# The grader's backend settings are read from the process environment by
# grading.grader.backends.registry (not through gagar_site/env.py), so its key secret is
# exported here.
if [ -n "${GAGAR_GRADER_API_KEY_FILE:-}" ] && [ -z "${GAGAR_GRADER_API_KEY:-}" ]; then
  GAGAR_GRADER_API_KEY="$(cat "$GAGAR_GRADER_API_KEY_FILE")"
  export GAGAR_GRADER_API_KEY
fi
exec "$@"
