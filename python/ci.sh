#!/usr/bin/env bash
# The Python wheel's checks: build it in release mode into a fresh virtual
# environment, run the pytest suite, check the stubs against the module and
# the typed user sample with mypy and pyright. Needs Rust, Python >= 3.9
# with pip, and Node.js with npm (pyright's PyPI package runs the npm
# package, which it fetches from the npm registry on its first run); run
# from anywhere.
set -euo pipefail
cd "$(dirname "$0")"
PYTHON="${PYTHON:-python3}"
VENV="${TRIPWIRE_CI_VENV:-../target/python-ci-venv}"

rm -rf "$VENV"
"$PYTHON" -m venv "$VENV"
# shellcheck disable=SC1091
. "$VENV/bin/activate"
# ccxt: tripwire.ccxt's end-to-end tests; pybreaker: the compat module's
# tests run against the real one too; redis: the client whose settings
# CircuitRedisStorage reads; requests, httpx, aiohttp:
# tripwire.http's tests against real clients.
python -m pip install --quiet --disable-pip-version-check \
  maturin==1.16.0 pytest==9.2.0 hypothesis==6.170.17 mypy==2.4.1 pyright==1.1.414 \
  prometheus-client==0.26.0 ccxt==4.5.90 pybreaker==1.4.1 redis==8.1.0 \
  requests==2.34.2 httpx==0.28.1 aiohttp==3.14.5 twine==7.0.0

# The sdist is what the index serves where no wheel fits: the wheel tested
# here is built from it by pip, in a folder of pip's own outside the
# repository, so a source the sdist lacks fails this build. One release
# build in all; its cache stays in target/ between local runs.
rm -rf ../target/wheels-ci
maturin sdist --out ../target/wheels-ci
CARGO_TARGET_DIR="$PWD/../target/python-sdist" python -m pip wheel --quiet --disable-pip-version-check \
  --no-deps --no-build-isolation --wheel-dir ../target/wheels-ci ../target/wheels-ci/tripwire-*.tar.gz
python -m twine check --strict ../target/wheels-ci/*
# The wheel's size, as python/README.md states it.
wheel=$(ls ../target/wheels-ci/tripwire-*.whl)
echo "wheel: $(basename "$wheel"), $(( $(stat -c %s "$wheel") / 1024 )) KiB"
python -m pip install --quiet --disable-pip-version-check --force-reinstall --no-deps "$wheel"

# From a directory without the sources, so that the installed wheel is what
# is tested, not ./tripwire.
cd tests
python -c 'import tripwire, sys; assert "site-packages" in tripwire.__file__, tripwire.__file__'
python -m pytest -q -p no:cacheprovider -c ../pyproject.toml --rootdir . --durations=10 .
# User code whose types must survive every decorator (see its docstring).
python -m mypy --strict --no-incremental typed_sample.py
pyright --project ../pyproject.toml typed_sample.py typed_ccxt.py
cd ..
# stubtest imports the installed package; the allowlist names its known
# false positives.
(cd "$VENV" && python -m mypy.stubtest tripwire --allowlist "$OLDPWD/stubtest-allowlist.txt" &&
  python -m mypy --strict --no-incremental -p tripwire)
