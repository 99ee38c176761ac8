"""Builds sgmcmc._C with the repository's CMake (one C++ core with the binary) against the torch
of the Python running pip: ``pip install --no-build-isolation ./python``.

Environment-free: everything comes from that Python (torch's CMake prefix, its CUDA when it has one)
and from CMAKE_ARGS / CMAKE_BUILD_PARALLEL_LEVEL as usual for CMake-built packages.
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


class CMakeBuild(build_ext):
    def build_extension(self, ext):
        import torch
        import torch.utils

        if not (ROOT / "CMakeLists.txt").exists():
            raise RuntimeError(f"{ROOT}: not sgmcmc's repository (install from a checkout: pip install ./python)")
        build = Path(self.build_temp) / "cmake"
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
        jobs = os.environ.get("CMAKE_BUILD_PARALLEL_LEVEL", str(os.cpu_count() or 1))
        subprocess.check_call(["cmake", "--build", str(build), "--target", "sgmcmc_python", "-j", jobs])
        built = list((build / "python" / "sgmcmc").glob("_C*"))
        if len(built) != 1:
            raise RuntimeError(f"{build}: expected one built _C module, found {built}")
        dest = Path(self.get_ext_fullpath(ext.name))
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(built[0], dest)


setup(ext_modules=[Extension("sgmcmc._C", sources=[])], cmdclass={"build_ext": CMakeBuild})
