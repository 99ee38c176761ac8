#!/usr/bin/env bash
# Runs CI as CI does: `bash .ci/run` in a fresh clone of a commit, with ../shared beside it, in a clean
# environment (CI's PATH, no CUDA bin dir, no user variables). A green run in one's own tree, or under
# one's own shell's PATH, hides missing install steps and tool-location assumptions (for example: the
# CUDA compile check found /usr/local/bin/nvcc, a wrapper, first on CI's PATH and failed there only).
#   usage: scripts/ci_local.sh [REV]      (default HEAD; the clone goes to a new directory under /tmp)
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"
rev="${1:-HEAD}"
shared="$(cd "$repo/../shared" 2>/dev/null && pwd || true)"
[[ -n "$shared" ]] || { echo "ci_local.sh: no ../shared beside $repo" >&2; exit 2; }
work="$(mktemp -d /tmp/sgmcmc-ci.XXXXXX)"
ln -s "$shared" "$work/shared"
git clone -q "$repo" "$work/main"
git -C "$work/main" checkout -q "$(git -C "$repo" rev-parse "$rev")"
echo "ci_local.sh: $(git -C "$work/main" log --oneline -1) in $work/main" >&2
start=$SECONDS
set +e
env -i HOME="${HOME:-/root}" TERM=dumb LANG=C.UTF-8 \
    PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    bash -c "cd '$work/main' && bash .ci/run"
rc=$?
set -e
echo "ci_local.sh: exit $rc after $((SECONDS - start)) s ($work/main)" >&2
exit $rc
