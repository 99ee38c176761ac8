"""Builds sgmcmc._C with the repository's CMake (one C++ core with the binary) against the torch
of the Python running pip: ``pip install --no-build-isolation ./python``.

Everything comes from that Python (torch's CMake prefix, its CUDA when it has one) and from
CMAKE_ARGS / CMAKE_BUILD_PARALLEL_LEVEL as usual for CMake-built packages. An existing CMake build of
the repository is reused (brought up to date with ``cmake --build DIR --target sgmcmc_python``, its
configuration left as it is): ``SGMCMC_BUILD_DIR`` names it (a directory without a CMakeCache.txt is
configured there), else ``build/`` when it builds the module for this same Python.
"""
import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

ROOT = Path(__file__).resolve().parent.parent


def _torch():
    """The installed torch, or a one-line exit saying how to install (pip's default isolated build environment
    holds setuptools only; the module must be compiled against the torch it runs with, which only the
    environment being installed into has)."""
    try:
        import torch
        import torch.utils  # noqa: F401
        return torch
    except ImportError as e:
        sys.exit(f"sgmcmc: the build needs your installed torch and cannot import it here ({e}): install with "
                 "`pip install --no-build-isolation ./python` (pip's isolated build environment has no torch, "
                 "and a torch fetched into it would not be the one the module runs with)")


def _cache_entry(build: Path, key: str) -> str:
    for line in (build / "CMakeCache.txt").read_text(errors="replace").splitlines():
        if line.startswith(key + ":"):
            return line.split("=", 1)[1]
    return ""


def _existing_build():
    """The CMake build to reuse: $SGMCMC_BUILD_DIR, else build/ where it builds the module for this Python."""
    given = os.environ.get("SGMCMC_BUILD_DIR")
    if given:
        return Path(given).resolve()
    build = ROOT / "build"
    if (build / "CMakeCache.txt").exists() and _cache_entry(build, "SGMCMC_PYTHON") == "ON" and \
            os.path.realpath(_cache_entry(build, "SGMCMC_PYTHON_EXE")) == os.path.realpath(sys.executable):
        return build
    return None


class CMakeBuild(build_ext):
    def build_extension(self, ext):
        torch = _torch()
        if not (ROOT / "CMakeLists.txt").exists():
            raise RuntimeError(f"{ROOT}: not sgmcmc's repository (install from a checkout: pip install ./python)")
        jobs = os.environ.get("CMAKE_BUILD_PARALLEL_LEVEL", str(os.cpu_count() or 1))
        build = _existing_build()
        if build is not None and (build / "CMakeCache.txt").exists():
            print(f"sgmcmc: reusing the CMake build in {build}", flush=True)
            subprocess.check_call(["cmake", "--build", str(build), "--target", "sgmcmc_python", "-j", jobs])
            return self._copy(build, ext)
        build = build or Path(self.build_temp) / "cmake"
        build.mkdir(parents=True, exist_ok=True)
        # torch's own directory as a prefix too, so that its lib/ is searched before the system's
        # (TorchConfig's find_library would otherwise take a system LibTorch, e.g. Debian's, first).
        torch_root = os.path.dirname(torch.__file__)
        args = [f"-DCMAKE_PREFIX_PATH={torch.utils.cmake_prefix_path};{torch_root}",
                f"-DPython3_EXECUTABLE={sys.executable}",
                "-DCMAKE_BUILD_TYPE=Release", "-DSGMCMC_PYTHON=ON", "-DSGMCMC_TESTS=OFF"]
        if torch.version.cuda and shutil.which("nvcc"):
            args.append("-DSGMCMC_CUDA=ON")
        if shutil.which("ninja"):
            args += ["-G", "Ninja"]
        args += shlex.split(os.environ.get("CMAKE_ARGS", ""))
        subprocess.check_call(["cmake", "-S", str(ROOT), "-B", str(build)] + args)
        subprocess.check_call(["cmake", "--build", str(build), "--target", "sgmcmc_python", "-j", jobs])
        self._copy(build, ext)

    def _copy(self, build: Path, ext) -> None:
        built = list((build / "python" / "sgmcmc").glob("_C*"))
        if len(built) != 1:
            raise RuntimeError(f"{build}: expected one built _C module, found {built}")
        dest = Path(self.get_ext_fullpath(ext.name))
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(built[0], dest)


_torch()  # before pip's first step prints anything else
setup(ext_modules=[Extension("sgmcmc._C", sources=[])], cmdclass={"build_ext": CMakeBuild})
