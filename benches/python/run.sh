#!/usr/bin/env bash
# The Python benchmark in one command: a fresh virtual environment with the
# wheel (release build) and the peers from PyPI, then benches/python/bench.py.
# Prints Markdown tables. Usage: benches/python/run.sh [--text] [--only WORD,WORD]
set -euo pipefail
cd "$(dirname "$0")/../.."
venv=${CARGO_TARGET_DIR:-target}/bench-python-venv
# Absolute: maturin runs from python/.
case $venv in /*) ;; *) venv=$PWD/$venv ;; esac
python3 -m venv --clear "$venv"
# shellcheck disable=SC1091
. "$venv/bin/activate"
pip install --quiet --disable-pip-version-check maturin==1.16.0 \
  pybreaker==1.4.1 circuitbreaker==2.1.3 aiobreaker==1.2.0 purgatory==3.0.1 redis==8.1.0 \
  aiolimiter==1.3.0 limits==5.8.0 pyrate-limiter==4.5.1 >&2
(cd python && maturin build --release --quiet --out "$venv/wheels") >&2
pip install --quiet --disable-pip-version-check --no-deps "$venv"/wheels/tripwire-*.whl >&2
if [ "${1:-}" = "--text" ]; then
  shift
  python benches/python/bench.py "$@"
else
  python benches/python/bench.py --markdown "$@"
  # The keyed and the decorated call in instructions, where valgrind is.
  if command -v valgrind >/dev/null; then
    echo
    python benches/python/instructions.py --markdown
  fi
fi
