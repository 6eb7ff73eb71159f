#!/usr/bin/env bash
# Everything a session lent a GPU machine should run, in one call: the CUDA tests and the GPU
# figures of the speed issue. The GPU machine reaches no registry, so the binaries are built here
# and carried there:
#
#   benches/gpu_session.sh build          # here: release test binaries and examples into .gpu/
#   benches/gpu_session.sh run [SECONDS]  # there, from the checkout's root (.gpu carried):
#                                         # tests, then figures, each with a time limit;
#                                         # logs under $OUT (or .gpu/logs) and a summary
#
# `build` needs `/.gpu/` in .git/info/exclude (it says so), so that the folder travels only when
# named in the device tool's `carry`. The test binaries find their data files through the path
# they were built in (`CARGO_MANIFEST_DIR`, e.g. /work/main): `run` links that path to the
# checkout when it does not exist there.
set -euo pipefail
cd "$(dirname "$0")/.."

# The integration-test targets with CUDA cases (each skips them, saying so, without a GPU).
TESTS=(ops nn views corpus leaks soak fused)
# Programs run on the GPU (their figures are the issue's tables), as built under target/release/:
# two performance harnesses (`-p harnesses`), an example of the facade, and the main job.
PROGRAMS=(examples/cuda_overhead examples/engine_overhead examples/derive_side_by_side train_mlp)

build() {
    if ! grep -qx '/.gpu/' .git/info/exclude 2>/dev/null; then
        echo "add '/.gpu/' to .git/info/exclude first (the folder must stay out of git)" >&2
        exit 2
    fi
    rm -rf .gpu && mkdir -p .gpu/tests .gpu/examples
    local args=()
    for t in "${TESTS[@]}"; do args+=(--test "$t"); done
    # The runtime's own unit tests hold the NVRTC, launch and generated-kernel cases.
    cargo test --release --no-run --message-format=json "${args[@]}" -p autograd -p autograd-runtime --lib \
        | python3 -c '
import json, sys
for line in sys.stdin:
    m = json.loads(line)
    if m.get("reason") == "compiler-artifact" and m.get("executable") and m["profile"]["test"]:
        t = m["target"]
        name = t["name"] if t["kind"] != ["lib"] else t["name"] + "_lib"
        print(name, m["executable"])
' | while read -r name exe; do cp "$exe" ".gpu/tests/$name"; done
    cargo build --release -p harnesses --example cuda_overhead --example engine_overhead
    cargo build --release -p autograd --example derive_side_by_side
    cargo build --release -p train-mlp --features cuda
    for p in "${PROGRAMS[@]}"; do cp "${CARGO_TARGET_DIR:-target}/release/$p" .gpu/examples/; done
    strip .gpu/tests/* .gpu/examples/* 2>/dev/null || true
    pwd > .gpu/built_in
    ls -l .gpu/tests .gpu/examples
    du -sh .gpu
}

run() {
    local limit="${1:-120}"
    local logs="${OUT:-.gpu/logs}"
    mkdir -p "$logs"
    local built_in
    built_in="$(cat .gpu/built_in)"
    if [ ! -e "$built_in" ]; then
        mkdir -p "$(dirname "$built_in")" && ln -s "$PWD" "$built_in"
    fi
    nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader || true
    local summary="$logs/summary.txt"
    : > "$summary"
    for t in .gpu/tests/*; do
        local name
        name="$(basename "$t")"
        # CUDA cases only where a binary has many others: their names say cuda or gpu.
        local filter=()
        case "$name" in
            ops | nn | views | corpus | leaks | soak | fused) filter=() ;;
            *_lib) filter=(cuda) ;;
        esac
        local rc=0
        # --nocapture: the CUDA cases print "skipped" (and why) without a device.
        (cd "$built_in" && timeout "$limit" "$OLDPWD/$t" "${filter[@]}" --nocapture) \
            > "$logs/test_$name.log" 2>&1 || rc=$?
        echo "test $name: exit $rc; $(grep -E '^test result' "$logs/test_$name.log" | tail -1)" | tee -a "$summary"
        { grep -E 'skipped|FAILED|panicked' "$logs/test_$name.log" || true; } | head -5 \
            | sed 's/^/    /' | tee -a "$summary"
    done
    local rc=0
    timeout "$limit" .gpu/examples/cuda_overhead > "$logs/cuda_overhead.txt" 2>&1 || rc=$?
    echo "cuda_overhead: exit $rc" | tee -a "$summary"
    rc=0
    timeout "$limit" .gpu/examples/derive_side_by_side > "$logs/derive_side_by_side.txt" 2>&1 || rc=$?
    echo "derive_side_by_side: exit $rc" | tee -a "$summary"
    rc=0
    (cd "$built_in" && /usr/bin/time -f 'wall %e s' timeout "$limit" "$OLDPWD/.gpu/examples/train_mlp" \
        --device cuda:0 --quiet) > "$logs/train_mlp_cuda.txt" 2>&1 || rc=$?
    echo "train_mlp --device cuda:0: exit $rc; $(tail -2 "$logs/train_mlp_cuda.txt" | tr '\n' ' ')" | tee -a "$summary"
    rc=0
    timeout "$limit" .gpu/examples/engine_overhead > "$logs/engine_overhead.txt" 2>&1 || rc=$?
    echo "engine_overhead (16 cores): exit $rc" | tee -a "$summary"
    if python3 -c 'import torch; assert torch.cuda.is_available()' 2>/dev/null; then
        rc=0
        timeout "$limit" python3 benches/compare_pytorch_cuda.py --rounds 2 \
            --ours .gpu/examples/cuda_overhead > "$logs/compare_pytorch_cuda.txt" 2>&1 || rc=$?
        echo "compare_pytorch_cuda: exit $rc" | tee -a "$summary"
    else
        echo "compare_pytorch_cuda: skipped (no PyTorch with CUDA here)" | tee -a "$summary"
    fi
}

case "${1:-}" in
    build) build ;;
    run) shift; run "$@" ;;
    *)
        echo "usage: $0 build | run [SECONDS]" >&2
        exit 2
        ;;
esac
