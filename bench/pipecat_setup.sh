#!/bin/sh
# Installs pipecat from a source checkout into .tmp/pipecat/ for `deno task bench:pipecat`.
#
#   bench/pipecat_setup.sh <pipecat checkout> [wait_for2 checkout]
#
# <pipecat checkout>: a work tree of https://github.com/pipecat-ai/pipecat (its src/ is used in
# place). The dependencies pipecat's core imports come from pip's index. On Python < 3.12 pipecat
# imports wait_for2; when the index lacks it, pass a checkout of
# https://github.com/Traktormaster/wait-for2 as the second argument. The `loudness` wheel is
# replaced by a stand-in that raises when called when the index lacks it: pipecat only uses it to
# compute audio volume, never on the routing path the bench measures.
set -eu
src=${1:?usage: bench/pipecat_setup.sh <pipecat checkout> [wait_for2 checkout]}
wf2=${2:-}
[ -f "$src/src/pipecat/__init__.py" ] || { echo "pipecat_setup: $src/src/pipecat not found" >&2; exit 2; }
out=.tmp/pipecat
py=${PIPECAT_PYTHON:-python3}
rm -rf "$out" && mkdir -p "$out/shims"
echo "pipecat_setup: venv with $($py --version) in $out/venv" >&2
$py -m venv "$out/venv"
pip="$out/venv/bin/pip"
export PIP_RETRIES=0 PIP_DISABLE_PIP_VERSION_CHECK=1
"$pip" install -q --no-deps -e "$src"
"$pip" install -q loguru numpy pydantic pillow aiofiles websockets soxr docstring_parser attrs
if ! "$out/venv/bin/python" -c 'import sys; sys.exit(sys.version_info < (3, 12))'; then
  if ! "$pip" install -q wait_for2 2>/dev/null; then
    [ -n "$wf2" ] || { echo "pipecat_setup: wait_for2 is not on the index; pass its checkout" >&2; exit 2; }
    "$pip" install -q "$wf2"
  fi
fi
if ! "$pip" install -q loudness 2>/dev/null; then
  echo "pipecat_setup: no loudness wheel; using a stand-in (not on the routing path)" >&2
  printf '%s\n' 'def integrated_loudness(*_a, **_k):' \
    '    raise RuntimeError("loudness stand-in: the wheel was not installable")' \
    >"$out/shims/loudness.py"
fi
ln -s "$(cd "$src" && pwd)/src" "$out/src"
commit=$(git -C "$src" rev-parse HEAD 2>/dev/null || echo "${PIPECAT_COMMIT:-unknown}")
echo "$commit" >"$out/commit"
echo "pipecat_setup: pipecat $commit ready; run: npx -y deno@2.9.6 task bench:pipecat" >&2
