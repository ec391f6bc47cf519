# fuser: the optional parts of the build, included by the top-level
# CMakeLists.txt after fuser_core is defined.
#
#   LLVM 19 (C API, NVPTX)  -> fuser_backend, FUSER_HAS_LLVM
#   CUDA Toolkit            -> FUSER_HAS_CUDA, FUSER_CUDA_ROOT, libdevice, ptxas
#   CUDA driver (cuda.h)    -> fuser_runtime from lib/runtime/*.c, FUSER_HAS_CUDA_DRIVER
#   nothing (dlopen)        -> fuser_target_cuda from lib/target/cuda/*.c, FUSER_HAS_CUDA_C
#
# Each part that is missing is left out with a clear message; fuser_core never
# depends on any of them.  What the tools and tests must link is appended to
# FUSER_TOOL_EXTRA_LIBS.

set(FUSER_TOOL_EXTRA_LIBS "")

# ---- LLVM 19 ------------------------------------------------------------------
option(FUSER_ENABLE_LLVM "Build the LLVM NVPTX backend when LLVM 19 is found" ON)
option(FUSER_LLVM_STATIC "Link LLVM's static component libraries instead of libLLVM-19.so, tools and tests alike" OFF)
# The tools (fuser-opt, ...) start a fresh process per fusion, and libLLVM-19.so
# costs them 15-20 ms of dynamic linking and relocation per process; linked
# with LLVM's static libraries, non-PIE, with a static libstdc++ and
# --gc-sections, they start in 2-3 ms (docs/performance.md, "Compile time").
# The unit tests keep libLLVM-19.so (when there is one) so that a full build
# links fast.
option(FUSER_LLVM_STATIC_TOOLS "Link the tools against LLVM's static libraries (the tests keep libLLVM-19.so)" ON)
set(FUSER_LLVM_CONFIG "" CACHE FILEPATH "llvm-config of LLVM 19 (empty: llvm-config-19 or /usr/lib/llvm-19/bin/llvm-config)")

set(FUSER_HAS_LLVM OFF)
set(_fuser_llvm_why "")
if(NOT FUSER_ENABLE_LLVM)
  set(_fuser_llvm_why "disabled with -DFUSER_ENABLE_LLVM=OFF")
else()
  if(FUSER_LLVM_CONFIG)
    set(_fuser_llvm_config "${FUSER_LLVM_CONFIG}")
  else()
    find_program(_fuser_llvm_config NAMES llvm-config-19 llvm-config
                 HINTS /usr/lib/llvm-19/bin NO_CACHE)
  endif()
  if(NOT _fuser_llvm_config OR NOT EXISTS "${_fuser_llvm_config}")
    set(_fuser_llvm_why "llvm-config-19 not found (install llvm-19-dev, or pass -DFUSER_LLVM_CONFIG=/path/to/llvm-config)")
  else()
    execute_process(COMMAND "${_fuser_llvm_config}" --version OUTPUT_VARIABLE _fuser_llvm_version
                    OUTPUT_STRIP_TRAILING_WHITESPACE RESULT_VARIABLE _rc)
    if(NOT _rc EQUAL 0 OR NOT _fuser_llvm_version MATCHES "^19\\.")
      set(_fuser_llvm_why "${_fuser_llvm_config} reports version '${_fuser_llvm_version}', need 19.x")
    else()
      execute_process(COMMAND "${_fuser_llvm_config}" --includedir OUTPUT_VARIABLE _fuser_llvm_includedir
                      OUTPUT_STRIP_TRAILING_WHITESPACE)
      execute_process(COMMAND "${_fuser_llvm_config}" --libdir OUTPUT_VARIABLE _fuser_llvm_libdir
                      OUTPUT_STRIP_TRAILING_WHITESPACE)
      execute_process(COMMAND "${_fuser_llvm_config}" --targets-built OUTPUT_VARIABLE _fuser_llvm_targets
                      OUTPUT_STRIP_TRAILING_WHITESPACE)
      if(NOT _fuser_llvm_targets MATCHES "NVPTX")
        set(_fuser_llvm_why "LLVM ${_fuser_llvm_version} at ${_fuser_llvm_config} was built without the NVPTX target")
      elseif(NOT EXISTS "${_fuser_llvm_includedir}/llvm-c/Core.h")
        set(_fuser_llvm_why "LLVM's C headers (llvm-c/Core.h) are missing under ${_fuser_llvm_includedir} (install llvm-19-dev)")
      else()
        set(_fuser_llvm_libs "")
        set(_fuser_llvm_shared_libs "")
        set(_fuser_llvm_static_ok OFF)
        if(NOT FUSER_LLVM_STATIC)
          find_library(_fuser_llvm_shared NAMES LLVM-19 LLVM PATHS "${_fuser_llvm_libdir}" NO_DEFAULT_PATH NO_CACHE)
          if(_fuser_llvm_shared)
            set(_fuser_llvm_shared_libs "${_fuser_llvm_shared}")
          endif()
        endif()
        if(NOT _fuser_llvm_shared_libs OR FUSER_LLVM_STATIC_TOOLS)
          # Static components: the NVPTX target plus what the backend calls.
          execute_process(COMMAND "${_fuser_llvm_config}" --link-static --libs
                                  nvptx passes bitreader bitwriter linker analysis core target transformutils
                          OUTPUT_VARIABLE _fuser_llvm_static_libs OUTPUT_STRIP_TRAILING_WHITESPACE RESULT_VARIABLE _rc1)
          execute_process(COMMAND "${_fuser_llvm_config}" --link-static --system-libs
                          OUTPUT_VARIABLE _fuser_llvm_system_libs OUTPUT_STRIP_TRAILING_WHITESPACE)
          if(_rc1 EQUAL 0 AND _fuser_llvm_static_libs)
            separate_arguments(_fuser_llvm_libs UNIX_COMMAND
                               "-L${_fuser_llvm_libdir} ${_fuser_llvm_static_libs}")
            # System libraries LLVM was built with (zlib, zstd, ...): a machine
            # may have the runtime library without the -dev symlink, so -lX
            # falls back to the full path of libX.so.N.
            separate_arguments(_fuser_sys UNIX_COMMAND "${_fuser_llvm_system_libs}")
            foreach(_tok ${_fuser_sys})
              if(_tok MATCHES "^-l(.+)$")
                set(_name "${CMAKE_MATCH_1}")
                find_library(_fuser_syslib_${_name} NAMES ${_name} NO_CACHE)
                if(NOT _fuser_syslib_${_name})
                  file(GLOB _cands /usr/lib/x86_64-linux-gnu/lib${_name}.so.* /usr/lib64/lib${_name}.so.*
                                   /usr/lib/lib${_name}.so.*)
                  if(_cands)
                    list(GET _cands 0 _fuser_syslib_${_name})
                  endif()
                endif()
                if(_fuser_syslib_${_name})
                  list(APPEND _fuser_llvm_libs "${_fuser_syslib_${_name}}")
                else()
                  list(APPEND _fuser_llvm_libs "${_tok}")
                endif()
              else()
                list(APPEND _fuser_llvm_libs "${_tok}")
              endif()
            endforeach()
            list(APPEND _fuser_llvm_libs stdc++)
            set(_fuser_llvm_static_ok ON)
          elseif(NOT _fuser_llvm_shared_libs)
            set(_fuser_llvm_why "neither libLLVM-19.so nor LLVM's static libraries were found in ${_fuser_llvm_libdir}")
          endif()
        endif()
        if(_fuser_llvm_libs OR _fuser_llvm_shared_libs)
          set(FUSER_HAS_LLVM ON)
        endif()
      endif()
    endif()
  endif()
endif()

if(FUSER_HAS_LLVM)
  file(GLOB FUSER_BACKEND_SOURCES CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/lib/target/llvm/*.c)
  if(NOT FUSER_BACKEND_SOURCES)
    set(FUSER_HAS_LLVM OFF)
    set(_fuser_llvm_why "lib/target/llvm has no sources")
  endif()
endif()
if(FUSER_HAS_LLVM)
  add_library(fuser_backend STATIC ${FUSER_BACKEND_SOURCES})
  # SYSTEM: LLVM's headers are not ours to keep -Wpedantic clean.
  target_include_directories(fuser_backend SYSTEM PRIVATE "${_fuser_llvm_includedir}")
  add_compile_definitions(FUSER_HAS_LLVM=1)
  list(APPEND FUSER_TOOL_EXTRA_LIBS fuser_backend)
  if(NOT _fuser_llvm_shared_libs)
    # Static everywhere: -DFUSER_LLVM_STATIC=ON, or no libLLVM-19.so.
    target_link_libraries(fuser_backend PUBLIC fuser_core ${_fuser_llvm_libs})
    message(STATUS "fuser: LLVM ${_fuser_llvm_version} backend enabled, linked statically (${_fuser_llvm_config}; ${_fuser_llvm_libs})")
  elseif(NOT _fuser_llvm_static_ok)
    # Shared everywhere: -DFUSER_LLVM_STATIC_TOOLS=OFF, or no static libraries.
    target_link_libraries(fuser_backend PUBLIC fuser_core ${_fuser_llvm_shared_libs})
    if(FUSER_LLVM_STATIC_TOOLS)
      message(STATUS "fuser: LLVM's static libraries were not found: the tools link ${_fuser_llvm_shared_libs} "
                     "(each process pays its dynamic linking, 15-20 ms)")
    endif()
    message(STATUS "fuser: LLVM ${_fuser_llvm_version} backend enabled (${_fuser_llvm_config}; ${_fuser_llvm_shared_libs})")
  else()
    # The default: a target with the property FUSER_LLVM_LINK_STATIC (the
    # tools, set below once they exist) links LLVM's static libraries, every
    # other target libLLVM-19.so.  One binary never gets both.
    set(_fuser_tool_llvm_libs "")
    foreach(_lib ${_fuser_llvm_libs})
      if(_lib STREQUAL "stdc++" AND NOT FUSER_SANITIZE)
        # A static libstdc++ saves the tools the relocation of libstdc++.so
        # (about 2 M instructions per process).
        execute_process(COMMAND ${CMAKE_C_COMPILER} -print-file-name=libstdc++.a
                        OUTPUT_VARIABLE _fuser_libstdcxx_a OUTPUT_STRIP_TRAILING_WHITESPACE)
        if(IS_ABSOLUTE "${_fuser_libstdcxx_a}" AND EXISTS "${_fuser_libstdcxx_a}")
          set(_lib "${_fuser_libstdcxx_a}")
        endif()
      endif()
      list(APPEND _fuser_tool_llvm_libs "${_lib}")
    endforeach()
    set(_fuser_static_sel "$<BOOL:$<TARGET_PROPERTY:FUSER_LLVM_LINK_STATIC>>")
    target_link_libraries(fuser_backend PUBLIC fuser_core
                          "$<${_fuser_static_sel}:${_fuser_tool_llvm_libs}>"
                          "$<$<NOT:${_fuser_static_sel}>:${_fuser_llvm_shared_libs}>")
    set(_fuser_tool_link_options "")
    if(NOT FUSER_SANITIZE)
      # Non-PIE: no run-time relocation of LLVM's 60000 pointers (vtables,
      # option tables); libgcc statically for the same reason as libstdc++.
      include(CheckLinkerFlag)
      check_linker_flag(C "-no-pie" FUSER_LINKER_HAS_NO_PIE)
      if(FUSER_LINKER_HAS_NO_PIE)
        list(APPEND _fuser_tool_link_options -no-pie)
      endif()
      list(APPEND _fuser_tool_link_options -static-libgcc)
      # Unused LLVM code left out: a smaller binary, 20% fewer page faults.
      check_linker_flag(C "-Wl,--gc-sections" FUSER_LINKER_HAS_GC_SECTIONS)
      if(FUSER_LINKER_HAS_GC_SECTIONS)
        list(APPEND _fuser_tool_link_options -Wl,--gc-sections)
      endif()
    endif()
    # Runs when the top-level CMakeLists.txt is done, after the tools exist.
    function(_fuser_link_tools_llvm_static)
      file(GLOB _srcs CONFIGURE_DEPENDS "${CMAKE_SOURCE_DIR}/tools/*.c")
      foreach(_src ${_srcs})
        get_filename_component(_tool "${_src}" NAME_WE)
        if(TARGET ${_tool})
          set_target_properties(${_tool} PROPERTIES FUSER_LLVM_LINK_STATIC ON)
          target_link_options(${_tool} PRIVATE ${_fuser_tool_link_options})
        endif()
      endforeach()
    endfunction()
    cmake_language(DEFER DIRECTORY "${CMAKE_SOURCE_DIR}" CALL _fuser_link_tools_llvm_static)
    set(_fuser_how "${_fuser_tool_link_options}")
    if(NOT _fuser_how)
      set(_fuser_how "PIE with the shared C++ runtime in a sanitizer build")
    endif()
    message(STATUS "fuser: LLVM ${_fuser_llvm_version} backend enabled (${_fuser_llvm_config}): the tools link "
                   "LLVM's static libraries (${_fuser_how}), the tests ${_fuser_llvm_shared_libs} "
                   "(-DFUSER_LLVM_STATIC_TOOLS=OFF: all shared; -DFUSER_LLVM_STATIC=ON: all static)")
  endif()
else()
  message(STATUS "fuser: building WITHOUT the LLVM backend: ${_fuser_llvm_why}. "
                 "--emit=llvm/--emit=ptx will report that this build has no LLVM backend, "
                 "and the lit tests that need it are marked unsupported.")
endif()

# ---- the CUDA C target (lib/target/cuda): --emit=cuda and --backend=nvrtc --------
# It needs nothing at build time: CUDA C is text, and libnvrtc is loaded with
# dlopen the first time PTX is asked of it (FUSER_LIBNVRTC overrides the path),
# so every build has it and a machine without NVRTC says so only then.  It is
# listed after llvm in lib/driver/targets.c: the preferred target where there
# is no LLVM.
option(FUSER_ENABLE_CUDA_C "Build the CUDA C target (--emit=cuda, NVRTC loaded at run time)" ON)
set(FUSER_HAS_CUDA_C OFF)
if(FUSER_ENABLE_CUDA_C)
  file(GLOB FUSER_CUDA_C_SOURCES CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/lib/target/cuda/*.c)
  if(FUSER_CUDA_C_SOURCES)
    set(FUSER_HAS_CUDA_C ON)
    add_library(fuser_target_cuda STATIC ${FUSER_CUDA_C_SOURCES})
    target_link_libraries(fuser_target_cuda PUBLIC fuser_core ${CMAKE_DL_LIBS})
    add_compile_definitions(FUSER_HAS_CUDA_C=1)
    list(APPEND FUSER_TOOL_EXTRA_LIBS fuser_target_cuda)
    message(STATUS "fuser: CUDA C target enabled (--emit=cuda; --backend=nvrtc loads libnvrtc at run time)")
    # Every kernel of the test suite's fusions compiled from its CUDA C with
    # no GPU: by nvcc, and by the nvrtc backend then ptxas.  Each skips
    # (77, saying why) where its compiler is missing.
    enable_testing()
    add_test(NAME unit.cuda_c_nvcc COMMAND ${CMAKE_SOURCE_DIR}/scripts/cuda-c-check.sh ${CMAKE_BINARY_DIR} nvcc)
    add_test(NAME unit.cuda_c_nvrtc COMMAND ${CMAKE_SOURCE_DIR}/scripts/cuda-c-check.sh ${CMAKE_BINARY_DIR} nvrtc)
    set_tests_properties(unit.cuda_c_nvcc unit.cuda_c_nvrtc PROPERTIES LABELS "unit" SKIP_RETURN_CODE 77)
  endif()
else()
  message(STATUS "fuser: the CUDA C target is disabled with -DFUSER_ENABLE_CUDA_C=OFF")
endif()

# ---- CUDA Toolkit: libdevice and ptxas ------------------------------------------
set(FUSER_HAS_CUDA OFF)
set(FUSER_CUDA_ROOT "")
set(_fuser_cuda_candidates "")
if(CUDAToolkit_ROOT)
  list(APPEND _fuser_cuda_candidates "${CUDAToolkit_ROOT}")
endif()
if(DEFINED ENV{CUDAToolkit_ROOT})
  list(APPEND _fuser_cuda_candidates "$ENV{CUDAToolkit_ROOT}")
endif()
list(APPEND _fuser_cuda_candidates /usr/local/cuda)
foreach(_root ${_fuser_cuda_candidates})
  if(EXISTS "${_root}/nvvm/libdevice/libdevice.10.bc" OR EXISTS "${_root}/include/cuda.h")
    set(FUSER_CUDA_ROOT "${_root}")
    break()
  endif()
endforeach()

if(FUSER_CUDA_ROOT)
  set(FUSER_HAS_CUDA ON)
  set(FUSER_LIBDEVICE "${FUSER_CUDA_ROOT}/nvvm/libdevice/libdevice.10.bc")
  find_program(FUSER_PTXAS_PATH ptxas HINTS "${FUSER_CUDA_ROOT}/bin" NO_DEFAULT_PATH NO_CACHE)
  add_compile_definitions(FUSER_HAS_CUDA=1 "FUSER_CUDA_ROOT=\"${FUSER_CUDA_ROOT}\"")
  if(EXISTS "${FUSER_LIBDEVICE}")
    # The backend's default; the environment variable FUSER_LIBDEVICE overrides it at run time.
    add_compile_definitions("FUSER_LIBDEVICE_PATH=\"${FUSER_LIBDEVICE}\"")
  else()
    message(STATUS "fuser: ${FUSER_LIBDEVICE} not found: math functions need FUSER_LIBDEVICE=/path/to/libdevice.10.bc at run time")
  endif()
  if(FUSER_PTXAS_PATH)
    add_compile_definitions("FUSER_PTXAS_PATH=\"${FUSER_PTXAS_PATH}\"")
  endif()
  # The libdevice functions lib/target/llvm/math.c calls, with everything they
  # call, extracted into the build tree: opening this 80 KB subset reads the
  # declarations of about 70 functions instead of libdevice's 350 (about 7 M
  # instructions less per compiling process), with byte-identical PTX.  A
  # function missing from the list is not an error: the backend then reads
  # the whole libdevice, with a warning (test_backend checks that the ops it
  # compiles never need that).
  set(FUSER_LIBDEVICE_SUBSET_FUNCTIONS
      exp exp2 expm1 log log2 log10 log1p rsqrt sin cos tan tanh sinh cosh asin acos atan
      erf erfc floor ceil rint trunc pow fmod atan2 acosh asinh atanh lgamma erfinv erfcinv nextafter
      sqrt fabs) # the last two only with --disable=fast_paths
  if(FUSER_HAS_LLVM AND EXISTS "${FUSER_LIBDEVICE}")
    execute_process(COMMAND "${_fuser_llvm_config}" --bindir OUTPUT_VARIABLE _fuser_llvm_bindir
                    OUTPUT_STRIP_TRAILING_WHITESPACE)
    find_program(FUSER_LLVM_EXTRACT llvm-extract HINTS "${_fuser_llvm_bindir}" NO_DEFAULT_PATH NO_CACHE)
    if(FUSER_LLVM_EXTRACT)
      string(JOIN "|" _fuser_ld_names ${FUSER_LIBDEVICE_SUBSET_FUNCTIONS})
      set(_fuser_ld_subset "${CMAKE_BINARY_DIR}/libdevice.fuser.bc")
      add_custom_command(OUTPUT "${_fuser_ld_subset}"
                         COMMAND "${FUSER_LLVM_EXTRACT}" --recursive "--rglob=.*" "--rfunc=^__nv_(${_fuser_ld_names})f?$"
                                 "${FUSER_LIBDEVICE}" -o "${_fuser_ld_subset}"
                         DEPENDS "${FUSER_LIBDEVICE}"
                         COMMENT "Extracting fuser's libdevice subset"
                         VERBATIM)
      add_custom_target(fuser_libdevice_subset ALL DEPENDS "${_fuser_ld_subset}")
      add_dependencies(fuser_backend fuser_libdevice_subset)
      target_compile_definitions(fuser_backend PRIVATE "FUSER_LIBDEVICE_SUBSET_PATH=\"${_fuser_ld_subset}\"")
    else()
      message(STATUS "fuser: no llvm-extract next to ${_fuser_llvm_config}: the backend reads all of libdevice")
    endif()
  endif()
  message(STATUS "fuser: CUDA Toolkit at ${FUSER_CUDA_ROOT} (libdevice: ${FUSER_LIBDEVICE}; ptxas: ${FUSER_PTXAS_PATH})")
else()
  message(STATUS "fuser: no CUDA Toolkit found (looked in CUDAToolkit_ROOT and /usr/local/cuda): "
                 "no libdevice (math functions need FUSER_LIBDEVICE=/path/to/libdevice.10.bc), no ptxas "
                 "(the lit tests that assemble PTX are marked unsupported), no CUDA driver runtime")
endif()

# ---- FUSER_HAS_CUDA_DRIVER: the CUDA driver runtime (lib/runtime) ------------------
# Owned by the runtime engineer: lib/runtime/*.c becomes fuser_runtime when
# cuda.h is found (with or without LLVM: a GPU host with only CUDA and cmake
# builds fuser-run and runs PTX compiled elsewhere).  The runtime needs no
# libcuda at link time: it loads libcuda.so.1 with dlopen when it opens the
# device (FUSER_LIBCUDA overrides the path), so the tools start, and say
# "no CUDA device found", on machines with no driver.  FUSER_CUDA_DRIVER_LIBRARY
# is only reported: the real driver library when one is installed, else the
# toolkit's link stub.
set(FUSER_HAS_CUDA_DRIVER OFF)
option(FUSER_ENABLE_CUDA_DRIVER "Build the CUDA driver runtime (lib/runtime) when cuda.h is found" ON)
file(GLOB FUSER_RUNTIME_SOURCES CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/lib/runtime/*.c)
set(_fuser_cuda_include_hints "")
if(FUSER_CUDA_ROOT)
  list(APPEND _fuser_cuda_include_hints "${FUSER_CUDA_ROOT}/include" "${FUSER_CUDA_ROOT}/targets/x86_64-linux/include")
endif()
find_path(FUSER_CUDA_INCLUDE_DIR cuda.h HINTS ${_fuser_cuda_include_hints} NO_CACHE)
find_library(FUSER_CUDA_DRIVER_LIBRARY NAMES cuda NO_CACHE)
set(_fuser_libcuda_note "${FUSER_CUDA_DRIVER_LIBRARY}")
if(NOT FUSER_CUDA_DRIVER_LIBRARY AND FUSER_CUDA_ROOT)
  find_library(FUSER_CUDA_DRIVER_LIBRARY NAMES cuda HINTS "${FUSER_CUDA_ROOT}/lib64/stubs"
               "${FUSER_CUDA_ROOT}/targets/x86_64-linux/lib/stubs" NO_DEFAULT_PATH NO_CACHE)
  if(FUSER_CUDA_DRIVER_LIBRARY)
    set(_fuser_libcuda_note "only the link stub ${FUSER_CUDA_DRIVER_LIBRARY}: no driver on this machine")
  else()
    set(_fuser_libcuda_note "no libcuda on this machine")
  endif()
endif()
if(NOT FUSER_ENABLE_CUDA_DRIVER)
  message(STATUS "fuser: the CUDA driver runtime is disabled with -DFUSER_ENABLE_CUDA_DRIVER=OFF")
elseif(FUSER_CUDA_INCLUDE_DIR AND FUSER_RUNTIME_SOURCES)
  set(FUSER_HAS_CUDA_DRIVER ON)
  add_library(fuser_runtime STATIC ${FUSER_RUNTIME_SOURCES})
  target_include_directories(fuser_runtime SYSTEM PUBLIC "${FUSER_CUDA_INCLUDE_DIR}")
  target_link_libraries(fuser_runtime PUBLIC fuser_core ${CMAKE_DL_LIBS})
  add_compile_definitions(FUSER_HAS_CUDA_DRIVER=1)
  list(APPEND FUSER_TOOL_EXTRA_LIBS fuser_runtime)
  message(STATUS "fuser: CUDA driver runtime enabled (cuda.h in ${FUSER_CUDA_INCLUDE_DIR}; "
                 "libcuda.so.1 is loaded at run time; ${_fuser_libcuda_note})")
  # The GPU suite: every fusion of test/gpu checked against the interpreter
  # (exit 77, skipped, where there is no GPU).
  enable_testing()
  add_test(NAME gpu.fusions COMMAND ${CMAKE_SOURCE_DIR}/scripts/gpu-tests.sh ${CMAKE_BINARY_DIR})
  set_tests_properties(gpu.fusions PROPERTIES LABELS "gpu" SKIP_RETURN_CODE 77)
  if(FUSER_HAS_CUDA_C)
    # The same cases with the kernels compiled by NVRTC from their CUDA C
    # (skipped where there is no GPU or no libnvrtc).
    add_test(NAME gpu.fusions_nvrtc COMMAND ${CMAKE_SOURCE_DIR}/scripts/gpu-tests.sh ${CMAKE_BINARY_DIR} --backend=nvrtc)
    set_tests_properties(gpu.fusions_nvrtc PROPERTIES LABELS "gpu" SKIP_RETURN_CODE 77)
  endif()
  # A fake driver library (host memory, C kernels) that fuser-run loads in
  # place of libcuda.so.1, so the tool's GPU path is tested everywhere.
  add_library(fuser_fake_cuda SHARED ${CMAKE_SOURCE_DIR}/test/fake_cuda.c)
  target_include_directories(fuser_fake_cuda SYSTEM PRIVATE "${FUSER_CUDA_INCLUDE_DIR}")
  add_test(NAME unit.fake_gpu_tool
           COMMAND $<TARGET_FILE:test_runtime> --tool $<TARGET_FILE:fuser-run> $<TARGET_FILE:fuser_fake_cuda>)
  set_tests_properties(unit.fake_gpu_tool PROPERTIES LABELS "unit" SKIP_RETURN_CODE 77
                       ENVIRONMENT "FUSER_REPRO_DIR=${CMAKE_BINARY_DIR}/repros")
  # The GPU test itself, run against the fake: checks the test's own logic.
  add_test(NAME unit.fake_gpu_runtime COMMAND $<TARGET_FILE:test_gpu_runtime>)
  set_tests_properties(unit.fake_gpu_runtime PROPERTIES LABELS "unit" SKIP_RETURN_CODE 77
                       ENVIRONMENT "FUSER_LIBCUDA=$<TARGET_FILE:fuser_fake_cuda>")
elseif(NOT FUSER_CUDA_INCLUDE_DIR)
  message(STATUS "fuser: no cuda.h found (looked in CUDAToolkit_ROOT and /usr/local/cuda): "
                 "the CUDA driver runtime (lib/runtime) is left out; fuser-run runs only --device=cpu")
endif()
