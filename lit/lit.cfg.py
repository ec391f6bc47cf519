# lit configuration for fuser's FileCheck tests.
import os
import shutil
import sys

import lit.formats

config.name = "fuser"
config.test_format = lit.formats.ShTest(execute_external=False)
config.suffixes = [".fir", ".py", ".test", ".kir"]
config.excludes = ["lit.cfg.py", "lit.site.cfg.py", "Inputs", "CMakeLists.txt"]
config.test_source_root = os.path.dirname(__file__)

# lit is run on the build's lit/ folder, whose lit.site.cfg.py (made by CMake)
# sets the paths below and then loads this file.
config.test_exec_root = os.path.join(config.fuser_obj_root, "lit")
path = [config.fuser_tools_dir, config.filecheck_dir, config.not_dir]
if config.ptxas_dir:
    path.append(config.ptxas_dir)
config.environment["PATH"] = os.pathsep.join(path + [os.environ.get("PATH", "")])
config.substitutions.append(("%fusions", os.path.join(config.fuser_src_root, "test", "fusions")))
config.substitutions.append(("%srcroot", config.fuser_src_root))
config.substitutions.append(("%python", sys.executable))
# the tools' folder, for scripts that take a BUILD dir (bench/persistent/variants.py)
config.substitutions.append(("%{fuser_tools}", config.fuser_tools_dir))
if config.ptxas_dir:
    config.available_features.add("ptxas")
# cuobjdump (--dump=sass): FUSER_CUOBJDUMP, beside ptxas (on the PATH above), or on PATH
if (os.environ.get("FUSER_CUOBJDUMP") or shutil.which("cuobjdump", path=config.environment["PATH"])):
    config.available_features.add("cuobjdump")
    if os.environ.get("FUSER_CUOBJDUMP"):
        config.environment["FUSER_CUOBJDUMP"] = os.environ["FUSER_CUOBJDUMP"]
if config.fuser_has_llvm:
    config.available_features.add("llvm")
if config.fuser_has_cuda:
    config.available_features.add("cuda")
# the CUDA C target (--emit=cuda, --backend=nvrtc), left out only with
# -DFUSER_ENABLE_CUDA_C=OFF
if getattr(config, "fuser_has_cuda_c", False):
    config.available_features.add("cuda-c")
# nvcc and libnvrtc (the nvrtc backend loads it at run time), where a CUDA
# Toolkit is beside ptxas or FUSER_LIBNVRTC names the library.
if config.ptxas_dir and os.access(os.path.join(config.ptxas_dir, "nvcc"), os.X_OK):
    config.available_features.add("nvcc")
def _nvrtc_loadable():
    import ctypes
    cands = [os.environ.get("FUSER_LIBNVRTC", "")]
    if config.ptxas_dir:
        cands.append(os.path.join(os.path.dirname(config.ptxas_dir), "lib64", "libnvrtc.so"))
    cands += ["libnvrtc.so", "libnvrtc.so.13", "libnvrtc.so.12"]
    for c in cands:
        try:
            if c:
                ctypes.CDLL(c)
                return True
        except OSError:
            pass
    return False
if "cuda-c" in config.available_features and _nvrtc_loadable():
    config.available_features.add("nvrtc")
# Every FileCheck run scopes its variables per CHECK-LABEL block.
config.environment["FILECHECK_OPTS"] = "-enable-var-scope"
# A run that fails on purpose writes its repro folder (docs/repro.md) into the
# build tree, not into $TMPDIR.
config.environment["FUSER_REPRO_DIR"] = os.path.join(config.test_exec_root, "repros")
# test/fake_cuda.c built as the driver library: fuser-run's GPU path on the
# host (FUSER_LIBCUDA=%fakecuda), for the tests of its failure paths.
_fake_cuda = os.path.join(config.fuser_obj_root, "libfuser_fake_cuda.so")
if os.path.exists(_fake_cuda):
    config.available_features.add("fake-cuda")
    config.substitutions.append(("%fakecuda", _fake_cuda))
# PyTorch and numpy (the GPU host has them): the repro scripts' inputs lists
# are evaluated and compared with the recorded inputs (lit/repro/torch-inputs.test).
import importlib.util
if importlib.util.find_spec("torch") and importlib.util.find_spec("numpy"):
    config.available_features.add("torch")
