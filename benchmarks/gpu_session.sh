#!/usr/bin/env bash
# One lent GPU session, in one call of at most ~9 minutes: what a new user runs on a GPU node,
# each step under its own timeout, its stdout and stderr to a file (never a terminal, as the
# first H100 run had it), its wall time to times.txt, and its results folder tarred. A failed or
# timed-out step does not stop the next one.
#
#   OUT=/some/dir bash benchmarks/gpu_session.sh      # from the repository root
#   DRY_RUN=1 OUT=/tmp/plan bash benchmarks/gpu_session.sh   # the plan and its timeouts only
#   (SESSION_S: the whole session's seconds; PYTHON: the interpreter, python3 by default;
#   REF_ROUNDS: the reference's rounds, 2 by default; REF_MODEL: its model, gpt2 by default
#   (vit-b16, bert-large, resnet50: the zoo's references not measured yet); STEPS: which steps,
#   in this order. The default tests what no GPU has run yet, first: "nvml perf_json busy
#   shared ownjob nsys" (NVML's raw link, version, fabric and counter answers beside validate's
#   verdict; validate --level perf --json; the busy trace over tiny-mlp, ResNet-50 and GPT-2;
#   ranks sharing the GPU under DDP, FSDP2 and hybrid with an injected straggler; a user's
#   script under profile -- at one rank against the same script bare; Nsight Systems where
#   nsys is on PATH). Also "perf workload bench ref" (what a new user runs) and "gputests zoo
#   zoo_compiled profile" (the gpu-marked tests, examples/gpu_zoo.yaml eager and compiled, a
#   torch.profiler profile of GPT-2), each run once; ZOO_MODELS: a YAML list that replaces the zoo's models, to
#   reach the ones an earlier session's time cut, e.g. "[vit-b16, bert-large]")
#
# What comes back (8 files at most, each under 16 MiB, nothing deeper than $OUT/):
#   gpu_state.txt   nvidia-smi -q -d CLOCK,POWER,PERFORMANCE and uptime, at the start and end
#   times.txt       one line per step: name, exit status (124: its timeout), seconds
#   workload.out.txt, bench.out.txt, ref.out.txt, perf.out.txt   each step's stdout + stderr
#   wl.tar.gz       /tmp/wl without compile caches and without files over 5 MB (traces)
#   res-perf.tar.gz /tmp/res, /tmp/perf, /tmp/zoo and /tmp/prof, the same rule
#
# Each step's timeout is its own (nvml 30, perf_json 100, busy 120, shared 3 x 50, ownjob 80,
# nsys 60; perf 110, workload 320, bench 170, ref 200, gputests 90, zoo 150, zoo_compiled 200,
# profile 110 s) or what is left of SESSION_S (default 540 s) less a reserve for the tars,
# whichever is shorter.
set -u
export PYTHONUNBUFFERED=1

OUT="${OUT:?set OUT to the folder that comes back}"
SESSION_S="${SESSION_S:-540}"
PY="${PYTHON:-python3}" # the interpreter with torch and torchscale's dependencies
RESERVE_S=25 # the tars and the closing nvidia-smi
MAX_FILE_BYTES=$((5 * 1000 * 1000))
mkdir -p "$OUT"
session_start=$(date +%s)

gpu_state() {
    {
        echo "== $1: $(date -u +%FT%TZ)"
        uptime
        nvidia-smi -q -d CLOCK,POWER,PERFORMANCE 2>&1 || echo "nvidia-smi failed: $?"
    } >>"$OUT/gpu_state.txt"
}

# step NAME TIMEOUT_S COMMAND...: COMMAND under timeout, stdout and stderr to $OUT/NAME.out.txt
step() {
    local name=$1 limit=$2
    shift 2
    if [[ -n ${DRY_RUN:-} ]]; then
        echo "$name (timeout ${limit}s): $*"
        return 0
    fi
    local left=$((SESSION_S - ($(date +%s) - session_start) - RESERVE_S))
    if ((left < limit)); then limit=$left; fi
    if ((limit < 10)); then
        echo "$name skipped: ${left}s left of the session" | tee -a "$OUT/times.txt"
        return 0
    fi
    local start end status
    start=$(date +%s)
    echo "== $name (timeout ${limit}s): $*" >"$OUT/$name.out.txt"
    timeout --kill-after=10 "$limit" "$@" >>"$OUT/$name.out.txt" 2>&1
    status=$?
    end=$(date +%s)
    echo "$name exit $status in $((end - start)) s (timeout $limit s)" >>"$OUT/times.txt"
    return 0
}

# pack TARBALL FOLDER...: the folders that exist, less compile caches and files over 5 MB
pack() {
    local tarball=$1
    shift
    local folders=() folder
    for folder in "$@"; do # absolute paths, stored relative to / (tmp/wl/...)
        [[ -d $folder ]] && folders+=("${folder#/}")
    done
    if ((${#folders[@]} == 0)); then
        echo "$tarball: nothing to pack" >>"$OUT/times.txt"
        return 0
    fi
    local list
    list=$(mktemp)
    (
        cd / || exit 1
        find "${folders[@]}" -type f -size "+${MAX_FILE_BYTES}c"
        find "${folders[@]}" -type d \( -name compile_cache -o -name 'torchinductor_*' \
            -o -name triton \) -prune -print
    ) >"$list"
    if [[ -s $list ]]; then
        echo "$tarball leaves out:" >>"$OUT/times.txt"
        sed 's/^/  /' "$list" >>"$OUT/times.txt"
    fi
    tar -C / -czf "$OUT/$tarball" --exclude-from="$list" "${folders[@]}" 2>>"$OUT/times.txt" ||
        echo "$tarball: tar exit $?" >>"$OUT/times.txt"
    rm -f "$list"
}

zoo_set=()
if [[ -n ${ZOO_MODELS:-} ]]; then zoo_set=(--set "models=$ZOO_MODELS"); fi

# the busy trace's sweep: one GPU, small windows, the three kinds of step it must tell apart
BUSY_YAML=/tmp/gpu_session_busy.yaml
[[ -n ${DRY_RUN:-} ]] || cat >"$BUSY_YAML" <<'YAML'
experiment_name: busy_sweep
models: [tiny-mlp, resnet50, gpt2]
batch_sizes: [16]
gpu_counts: [1]
device: cuda
training: {precision: [bf16], compile: false}
measurement: {warmup_steps: 5, steps: 20, repeats: 2}
YAML
# ranks sharing one GPU, a straggler injected on rank 1: the device reading must not blame the GPU
SHARED=(-m torchscale profile --model tiny-gpt2 --device cuda --steps 20 --precision bf16
    --inject-delay 1:backward:20 -o /tmp/shared)

if [[ -z ${DRY_RUN:-} ]]; then
    gpu_state start
    rm -rf /tmp/wl /tmp/res /tmp/perf /tmp/zoo /tmp/prof /tmp/busy /tmp/shared
fi

# stdout and stderr to the file: the progress a user sees off a terminal
for name in ${STEPS:-nvml perf_json busy shared ownjob nsys}; do
    case $name in
    nvml) step nvml 30 "$PY" benchmarks/nvml_raw.py ;;
    perf_json) step perf_json 100 "$PY" -m torchscale validate --level perf --json -o /tmp/perf ;;
    busy) step busy 120 "$PY" -m torchscale benchmark -c "$BUSY_YAML" -o /tmp/busy ;;
    shared)
        step shared_ddp 50 "$PY" "${SHARED[@]}" --gpus 2 --ranks-per-gpu 2 --strategy ddp --name ddp
        step shared_fsdp 50 "$PY" "${SHARED[@]}" --gpus 2 --ranks-per-gpu 2 --strategy fsdp \
            --name fsdp
        step shared_hybrid 50 "$PY" "${SHARED[@]}" --gpus 4 --ranks-per-gpu 4 --strategy hybrid \
            --name hybrid
        ;;
    ownjob) step ownjob 80 "$PY" benchmarks/own_job_overhead.py --world 1 --rounds 3 \
        --warmup 10 --steps 60 --work-pairs 0 ;;
    nsys)
        if command -v nsys >/dev/null || [[ -n ${DRY_RUN:-} ]]; then
            step nsys 60 "$PY" -m torchscale profile --tool nsys --gpus 1 --model gpt2 \
                --batch-size 16 --precision bf16 --device cuda --steps 20 -o /tmp/prof
        else
            echo "nsys skipped: not on PATH" >>"$OUT/times.txt"
        fi
        ;;
    perf) step perf 110 "$PY" -m torchscale validate --level perf -o /tmp/perf ;;
    workload)
        step workload 320 "$PY" -m torchscale validate --level workload -o /tmp/wl
        pack wl.tar.gz /tmp/wl
        ;;
    bench) step bench 170 "$PY" -m torchscale benchmark -c benchmark_config.yaml -o /tmp/res ;;
    ref) step ref 200 "$PY" benchmarks/workload_reference.py --model "${REF_MODEL:-gpt2}" --batch 16 \
        --device cuda --compile --rounds "${REF_ROUNDS:-2}" --steps 30 ;;
    gputests) # only the files that hold gpu-marked tests: the image lacks test-only packages
        # (jsonschema), and a collection error in any other file stops the whole run
        mapfile -t files < <(grep -rlE "pytest\.mark\.gpu|pytestmark = pytest\.mark\.gpu" tests)
        step gputests 90 "$PY" -m pytest -q -m gpu --runslow -p no:cacheprovider "${files[@]}"
        ;;
    zoo) step zoo 150 "$PY" -m torchscale benchmark -c examples/gpu_zoo.yaml \
        --set training.compile=false "${zoo_set[@]}" -o /tmp/zoo ;;
    zoo_compiled) step zoo_compiled 200 "$PY" -m torchscale benchmark -c examples/gpu_zoo.yaml \
        --set training.compile=true --set experiment_name=gpu_zoo_compiled "${zoo_set[@]}" -o /tmp/zoo ;;
    profile) step profile 110 "$PY" -m torchscale profile --gpus 1 --model gpt2 --batch-size 16 \
        --precision bf16 --device cuda --steps 30 -o /tmp/prof ;;
    *) echo "unknown step $name" >>"$OUT/times.txt" ;;
    esac
done
if [[ -n ${DRY_RUN:-} ]]; then exit 0; fi
pack res-perf.tar.gz /tmp/res /tmp/perf /tmp/zoo /tmp/prof /tmp/busy /tmp/shared

gpu_state end
echo "session $(($(date +%s) - session_start)) s" >>"$OUT/times.txt"
exit 0
