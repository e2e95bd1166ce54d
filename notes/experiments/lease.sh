#!/usr/bin/env bash
# The GPU checks of a lease, on sm_90 builds made here (a 2-core machine builds gemv.cu in about 10
# minutes a target architecture; the lent machine has no fmt, so its library travels beside them).
#
# Here, from the project root:
#   notes/experiments/lease.sh pack            # build-gpu/ (GUI off, sm_90) -> .devdeps/lease/{dq,t}.xz + lib/
#   notes/experiments/lease.sh pack-main REV   # REV's dequant-lab -> .devdeps/lease/dqm.xz (for `ab`)
# On the lent machine (run, carry [".devdeps/lease"], one call each while it stays warm):
#   bash .devdeps/lease/lease.sh suite         # the whole GPU suite with each case's time (about 330 s)
#   bash .devdeps/lease/lease.sh san           # memcheck and racecheck on the cases named in $SAN_CASES
#   bash .devdeps/lease/lease.sh ab            # REV against this build, a run at a time and back to back
#   bash .devdeps/lease/lease.sh runs          # the docs/runs GEMV set, a run at a time and back to back
# Each writes a few files under $OUT (only 8 come back) and prints its summary.
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

unpack() {
  mkdir -p /tmp/lease
  for b in dq t dqm; do
    if [[ -f "$here/$b.xz" && ! -x /tmp/lease/$b ]]; then
      xz -dc "$here/$b.xz" >/tmp/lease/$b && chmod +x /tmp/lease/$b
    fi
  done
  export LD_LIBRARY_PATH="$here/lib:${LD_LIBRARY_PATH:-}"
  export PATH=/usr/local/cuda/bin:$PATH
}

case "${1:-}" in
  pack)
    out=.devdeps/lease
    mkdir -p "$out/lib"
    cp "$0" "$out/lease.sh"
    cp -L /lib/x86_64-linux-gnu/libfmt.so.9 "$out/lib/"
    strip -o /tmp/lease-dq build-gpu/bin/dequant-lab && xz -T2 -6 -c /tmp/lease-dq >"$out/dq.xz"
    strip -o /tmp/lease-t build-gpu/bin/dql_gpu_tests && xz -T2 -6 -c /tmp/lease-t >"$out/t.xz"
    du -sh "$out"
    ;;
  pack-main)
    rev="${2:?a revision}"
    git worktree add -f --detach /tmp/lease-main "$rev" >/dev/null
    cmake -S /tmp/lease-main -B /tmp/lease-main/build -G Ninja -DCMAKE_BUILD_TYPE=Release -DDQL_BUILD_GUI=OFF \
      -DDQL_BUILD_TESTS=OFF -DCMAKE_CUDA_ARCHITECTURES=90 >/dev/null
    cmake --build /tmp/lease-main/build --target dequant-lab -j2 | tail -n 1
    strip -o /tmp/lease-dqm /tmp/lease-main/build/bin/dequant-lab && xz -T2 -6 -c /tmp/lease-dqm >.devdeps/lease/dqm.xz
    du -sh .devdeps/lease
    ;;
  suite)
    unpack
    nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv >"$OUT/suite.txt"
    /tmp/lease/dq device >>"$OUT/suite.txt" 2>&1
    timeout 560 /tmp/lease/t -d >"$OUT/suite_full.log" 2>&1
    echo "rc=$?" >>"$OUT/suite.txt"
    grep -E "^\[doctest\]|ERROR|FAILED|skip" "$OUT/suite_full.log" | tail -40 >>"$OUT/suite.txt"
    cat "$OUT/suite.txt"
    ;;
  san)
    unpack
    cases="${SAN_CASES:-gemv: layers launched back to back*,launches: *,gemv / gemm: an operand not 16-byte*,gemv: AWQ with 1-16 rows*}"
    : >"$OUT/san.txt"
    for tool in memcheck racecheck; do
      DQL_GPU_TEST_LOG2=18 DQL_GPU_TEST_SKIP_CUBLAS=1 timeout 270 compute-sanitizer --tool "$tool" \
        --error-exitcode 9 /tmp/lease/t -tc="$cases" >"$OUT/san_$tool.log" 2>&1
      echo "$tool rc=$?" >>"$OUT/san.txt"
      grep -E "ERROR SUMMARY|RACECHECK SUMMARY|test cases|assertions" "$OUT/san_$tool.log" >>"$OUT/san.txt"
    done
    cat "$OUT/san.txt"
    ;;
  ab)
    unpack
    args=(--shape "${AB_SHAPES:-28672x8192,8192x8192,4096x4096}" --batch "${AB_BATCH:-1,2,16}")
    for round in 1 2; do
      for mode in single b2b; do
        extra=()
        [[ $mode == b2b ]] && extra=(--back-to-back)
        for v in m t; do
          bin=/tmp/lease/dq
          [[ $v == m ]] && bin=/tmp/lease/dqm
          for k in ${AB_KERNELS:-w4a16-ft-fp16 w4a16-awq-fp16}; do
            "$bin" bench --kernel "gemv/$k" "${args[@]}" "${extra[@]}" \
              --json "/tmp/lease/ab_${mode}_${v}_${round}_$k.json" >"/tmp/lease/ab_${mode}_${v}_${round}_$k.txt" 2>&1
          done
        done
      done
    done
    head -n 12 "$(ls /tmp/lease/ab_single_t_1_*.txt | head -n 1)" >"$OUT/ab.txt"
    python3 - >>"$OUT/ab.txt" <<'PY'
import glob, json
def rows(mode, v, i):
    out = {}
    for f in sorted(glob.glob(f'/tmp/lease/ab_{mode}_{v}_{i}_*.json')):
        out.update({(r['kernel'], r['shape']): r['median_us'] for r in json.load(open(f))['rows']})
    return out
for mode in ('single', 'b2b'):
    print(f"\n{mode}: kernel shape | main us, two rounds | this build us | main / this build")
    m = [rows(mode, 'm', i) for i in (1, 2)]
    t = [rows(mode, 't', i) for i in (1, 2)]
    for key in m[0]:
        mm = [x[key] for x in m]
        tt = [x.get(key, float('nan')) for x in t]
        print(f"{key[0]} {key[1]} | {mm[0]:.2f} {mm[1]:.2f} | {tt[0]:.2f} {tt[1]:.2f} | "
              f"{mm[0] / tt[0]:.3f} {mm[1] / tt[1]:.3f}")
PY
    cat "$OUT/ab.txt"
    ;;
  runs)
    unpack
    stamp=$(date -u +%Y-%m-%d)
    gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200 && echo h200 || echo h100)
    set=(--kernel 'gemv/*' --shape 28672x8192,8192x28672,8192x8192,4096x4096 --batch 1,16)
    /tmp/lease/dq bench "${set[@]}" --json "$OUT/$gpu-$stamp-gemv.json" >"$OUT/runs.txt" 2>&1
    /tmp/lease/dq bench "${set[@]}" --back-to-back --json "$OUT/$gpu-$stamp-gemv-back-to-back.json" \
      >>"$OUT/runs.txt" 2>&1
    cat "$OUT/runs.txt"
    ;;
  *)
    sed -n 2,15p "$0"
    exit 2
    ;;
esac
