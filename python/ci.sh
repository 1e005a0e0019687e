#!/usr/bin/env bash
# The Python wheel's checks: build it in release mode into a fresh virtual
# environment, run the pytest suite and check the stubs against the module.
# Needs only Rust and Python >= 3.9 with pip; run from anywhere.
set -euo pipefail
cd "$(dirname "$0")"
PYTHON="${PYTHON:-python3}"
VENV="${TRIPWIRE_CI_VENV:-../target/python-ci-venv}"

rm -rf "$VENV"
"$PYTHON" -m venv "$VENV"
# shellcheck disable=SC1091
. "$VENV/bin/activate"
# ccxt: tripwire.ccxt's end-to-end tests; pybreaker: the compat module's
# tests run against the real one too.
python -m pip install --quiet --disable-pip-version-check \
  maturin==1.16.0 pytest==9.2.0 hypothesis==6.170.17 mypy==2.4.1 \
  ccxt==4.5.90 pybreaker==1.4.1

rm -rf ../target/wheels-ci
maturin build --release --quiet --out ../target/wheels-ci
python -m pip install --quiet --disable-pip-version-check --force-reinstall --no-deps ../target/wheels-ci/tripwire-*.whl

# From a directory without the sources, so that the installed wheel is what
# is tested, not ./tripwire.
cd tests
python -c 'import tripwire, sys; assert "site-packages" in tripwire.__file__, tripwire.__file__'
python -m pytest -q -p no:cacheprovider -c ../pyproject.toml --rootdir . .
cd ..
# stubtest imports the installed package; the allowlist names its known
# false positives.
(cd "$VENV" && python -m mypy.stubtest tripwire --allowlist "$OLDPWD/stubtest-allowlist.txt" &&
  python -m mypy --strict --no-incremental -p tripwire)
