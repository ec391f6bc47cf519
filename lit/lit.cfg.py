# lit configuration for fuser's FileCheck tests.
import os
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
if config.ptxas_dir:
    config.available_features.add("ptxas")
if config.fuser_has_llvm:
    config.available_features.add("llvm")
if config.fuser_has_cuda:
    config.available_features.add("cuda")
# Every FileCheck run scopes its variables per CHECK-LABEL block.
config.environment["FILECHECK_OPTS"] = "-enable-var-scope"
