#!/usr/bin/env bash
# Installs what is missing, builds, and runs every test.   usage: scripts/test.sh
set -euo pipefail
cd "$(dirname "$0")/.."
root="$PWD"
bash scripts/setup.sh --with-data
/usr/bin/python3 scripts/check_docs.py  # docs: code fences, relative links, no chronicle in prose
bash scripts/build.sh
cd "${SGMCMC_BUILD_DIR:-build}"
ctest --output-on-failure -j"$(nproc)" --timeout 900
# ArviZ is the package's optional dependency (PyPI): its tests again in a virtual environment over Debian's
# torch that has it, and the example notebook executed there (nbclient, ipykernel, matplotlib: a cell that
# raises fails it). Without PyPI they stay skipped, and this says so.
if [ -d python/sgmcmc ] && /usr/bin/python3 -m venv --system-site-packages venv-arviz >/dev/null 2>&1 &&
   venv-arviz/bin/pip install -q --disable-pip-version-check "numpy<2" arviz nbclient ipykernel matplotlib \
     >/dev/null 2>&1; then
  PYTHONPATH="$PWD/python" OMP_NUM_THREADS=1 SGMCMC_TEST_BINARY="$PWD/sgmcmc" \
    venv-arviz/bin/python -m pytest -q -p no:cacheprovider "$root/python/tests/test_inference_data.py" \
    "$root/python/tests/test_notebook.py"
else
  echo "test.sh: ArviZ, nbclient or matplotlib could not be installed from PyPI: their tests were skipped"
fi
# The package against a current PyTorch 2.x from PyPI too (Debian's is 1.13), in a virtual environment of
# its own: pip builds the module there from the samplers' part of the core (-DSGMCMC_PYTHON_ONLY=ON, in
# torch2/; without sgmcmc.train, whose trainer is the whole core), then the package's tests run against
# it, those that compare with the binary against the one built above. PyPI's Linux torch is a CUDA build
# (3 GB to download with its nvidia-* wheels, 6 GB installed) that runs on the CPU alone. Without PyPI
# they stay skipped, and this says so.
if /usr/bin/python3 -m venv venv-torch2 >/dev/null 2>&1 &&
   venv-torch2/bin/pip install -q --disable-pip-version-check --no-cache-dir "torch>=2,<3" numpy pytest arviz \
     nbclient ipykernel matplotlib >/dev/null 2>&1; then
  SGMCMC_BUILD_DIR="$PWD/torch2" CMAKE_ARGS="-DSGMCMC_PYTHON_ONLY=ON -DSGMCMC_CUDA=OFF" \
    CMAKE_BUILD_PARALLEL_LEVEL="$(nproc)" venv-torch2/bin/pip install -q --disable-pip-version-check \
    --no-cache-dir --no-build-isolation "$root/python" >torch2.log 2>&1 || { cat torch2.log; exit 1; }
  venv-torch2/bin/python -c "import torch; print('test.sh: the Python package against torch', torch.__version__)"
  OMP_NUM_THREADS=1 SGMCMC_TEST_BINARY="$PWD/sgmcmc" \
    venv-torch2/bin/python -m pytest -q -p no:cacheprovider "$root/python/tests"
else
  echo "test.sh: torch 2.x could not be installed from PyPI: the Python package's tests against it were skipped"
fi
