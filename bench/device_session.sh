#!/usr/bin/env bash
# fuser: one GPU session's steps, for a GPU host without LLVM (the kernels are
# precompiled on a machine with LLVM and carried over).  Each step writes its
# results under OUT (default: ./device-out); steps run in the order given, so
# a session split over several calls of a lent machine keeps its build and
# results in between when BUILD and OUT lie inside the checkout.
#
#   bench/device_session.sh STEP...
#
# Steps:
#   build            a runtime-only build (no LLVM) of fuser-run, fuser-kir,
#                    fuser-translate and fuser-opt (the NVRTC run writes
#                    each case's CUDA C again) in BUILD (default build-dev)
#   tests[:BACKEND]  scripts/gpu-tests.sh BUILD GPU_PRE (every GPU case with
#                    --check); BACKEND nvrtc runs them through NVRTC instead
#   nvf              nvFuser itself on the peer targets (PEERS/nvfuser:
#                    setup.sh then nvf_bench.py targets) -> OUT/nvf.json;
#                    NVF_CASES limits the cases (a comma list of prefixes)
#   torch:GROUP      eager and torch.compile (PEERS/peer_targets.py, GROUP
#                    reduction, persistent or movement) -> OUT/torch-GROUP.json
#   files:DIR        eager, torch.compile (bench/torch_files.py) and nvFuser
#                    (nvf_bench.py files) on the nvFuser definitions DIR/*.py
#                    -> OUT/torch-files-<DIR's name>.json, OUT/nvf-files-<...>.json
#   bench:DIR        bench/kernel_bench.py run BUILD DIR with every peer JSON
#                    already in OUT -> OUT/bench-<DIR's name>.md
#
# Environment: BUILD, OUT, GPU_PRE (default .carry/gpu), PEERS (default
# .carry/peers: peer_targets.py, nvf_torch.py, nvfuser/ with nvf.tar.xz from
# ../shared/bench/nvfuser/fetch.sh), ITERS (default 100), WARMUP (10),
# CHECK (default 1; 0 times the bench cases without the interpreter's check).
set -u
here=$(cd "$(dirname "$0")" && pwd)
src=$(dirname "$here")
build=${BUILD:-$src/build-dev}
out=${OUT:-$src/device-out}
pre=${GPU_PRE:-$src/.carry/gpu}
peers=${PEERS:-$src/.carry/peers}
iters=${ITERS:-100}
warmup=${WARMUP:-10}
mkdir -p "$out" || exit 2
[ $# -ge 1 ] || { sed -n '2,30p' "$0" | sed 's/^# \{0,1\}//'; exit 2; }

status=0
step_failed() {
  echo "device_session: step '$1' failed (exit $2)" >&2
  status=1
}

nvf_env_ready=0
nvf_env() {
  [ $nvf_env_ready = 1 ] && return 0
  local env
  env=$(bash "$peers/nvfuser/setup.sh" "$peers/nvfuser/nvf.tar.xz") || return 1
  eval "$env"
  nvf_env_ready=1
}

for step in "$@"; do
  name=${step%%:*}
  arg=${step#*:}
  [ "$arg" = "$step" ] && arg=""
  echo "== $step ($(date -u +%H:%M:%S))"
  case $name in
    build)
      cmake -S "$src" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DFUSER_ENABLE_LLVM=OFF >/dev/null &&
        ninja -C "$build" fuser-run fuser-translate fuser-opt fuser-kir >/dev/null || step_failed "$step" $?
      ;;
    tests)
      extra=()
      [ -n "$arg" ] && extra=(--backend="$arg")
      "$src/scripts/gpu-tests.sh" "$build" "$pre" "${extra[@]}" 2>&1 | tee "$out/gpu-tests${arg:+-$arg}.log"
      rc=${PIPESTATUS[0]}
      [ "$rc" = 0 ] || step_failed "$step" "$rc"
      ;;
    nvf)
      if nvf_env; then
        (cd "$peers/nvfuser" && CASES=${NVF_CASES:-} PYTHONUNBUFFERED=1 python3 nvf_bench.py targets "$out/nvf.json") ||
          step_failed "$step" $?
      else
        step_failed "$step" 1
      fi
      ;;
    torch)
      (cd "$peers" && GROUP=$arg PYTHONUNBUFFERED=1 python3 peer_targets.py "$out/torch-$arg.json") ||
        step_failed "$step" $?
      ;;
    files)
      tag=$(basename "$arg")
      cases=("$(cd "$arg" && pwd)"/*.py)
      PYTHONUNBUFFERED=1 python3 "$here/torch_files.py" "$peers" "$out/torch-files-$tag.json" "${cases[@]}" ||
        step_failed "$step" $?
      if nvf_env; then
        (cd "$peers/nvfuser" && PYTHONUNBUFFERED=1 python3 nvf_bench.py files "$out/nvf-files-$tag.json" "${cases[@]}") ||
          step_failed "$step" $?
      else
        step_failed "$step" 1
      fi
      ;;
    bench)
      dir=${arg:-$src/.carry/kb}
      tag=$(basename "$dir")
      peer_args=()
      for j in "$out"/torch-*.json "$out"/nvf*.json; do
        [ -f "$j" ] && peer_args+=(--peers "$j")
      done
      check_args=()
      [ "${CHECK:-1}" = 0 ] && check_args=(--no-check)
      python3 "$here/kernel_bench.py" run "$build" "$dir" --iters "$iters" --warmup "$warmup" "${peer_args[@]}" \
        "${check_args[@]}" |
        tee "$out/bench-$tag.md"
      rc=${PIPESTATUS[0]}
      [ "$rc" = 0 ] || step_failed "$step" "$rc"
      ;;
    *)
      echo "device_session: unknown step '$step'" >&2
      exit 2
      ;;
  esac
done
exit $status
