#!/usr/bin/env bash
# One GPU session's worth of model benchmarks, in under 8 minutes, with tables written to benchmarks/.
#
#   PYTHON=/path/to/python benchmarks/gpu/run.sh            # a Python with a GPU torch (ROCm or CUDA)
#   BUDGET_S=480 MODELS=DistillGPT2,BertForMaskedLM benchmarks/gpu/run.sh
#
# 0. rocmkit doctor --level 2 on issue 32's checks: compile.correctness (eager vs torch.compile
#    training curves, default and reduce-overhead), compile.cache_speed (cold vs warm), env.caches,
#    env.apu_memory, the Triton vector add and matmul (and the all-reduce with 2+ GPUs); each figure
#    with its % of peak and its floor from matrices/sku.toml, as Markdown (benchmarks/gpu/floors.py);
# 0b. hardware health (docs/hardware.md): the level-0 hw.* facts (PCIe link, ECC, XGMI/NVLink, power
#    and temperature, firmware), hw.memtest over MEMTEST_FRACTION (default 0.1) of each GPU's free
#    memory and hw.p2p_bandwidth (every GPU pair against matrices/sku.toml's floor, host-to-device
#    against the trained link), JSON into benchmarks/gpu/results/ (HW_S, default 120 s);
# 1. rocmkit doctor --level 3 --only models (the HF representative subset: decoder, encoder,
#    encoder-decoder), JSON into benchmarks/gpu/results/;
# 2. rocmkit bench models --suite huggingface at full size, training with AMP bf16 (the setup
#    of the MI250 figure), on a subset of PyTorch's HF list; every row is appended to a
#    results file as it finishes, so whatever the budget allowed is kept;
# 3. the tables as Markdown (benchmarks/gpu-<device>.md) and HTML, and a compare against the
#    MI250 reference line;
# 4. the jax checks (rocmkit doctor --framework jax --level 3: the plugin loads with
#    JAX_PLATFORMS set, the devices and their archs, jit vs op by op, bf16/fp16 matmul
#    TFLOP/s, psum across the GPUs) in JAX_PYTHON (default: PYTHON, when it has jax), JSON
#    into benchmarks/gpu/results/. Skipped, saying so, where no Python with jax is at hand;
# 5. the companion checks (companion.xformers, .flash_attn, .bitsandbytes) of the libraries PYTHON
#    has, JSON into benchmarks/gpu/results/.
#
# Each step has its own timeout inside the overall budget; a step that runs out leaves its
# partial results. Needs: a Python with torch that sees a GPU, transformers, and rocmkit's own
# dependencies (click, packaging, psutil, platformdirs, distro, rich); the repository root is
# put on PYTHONPATH, so rocmkit itself need not be installed.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
py="${PYTHON:-python3}"
budget="${BUDGET_S:-480}"
models="${MODELS:-DistillGPT2,BertForMaskedLM,T5Small,GPT2ForSequenceClassification}"
out="${OUT_DIR:-$here/results}"
tables="${TABLES_DIR:-$root/benchmarks}"
mkdir -p "$out"
export PYTHONPATH="$root${PYTHONPATH:+:$PYTHONPATH}"
start=$(date +%s)

left() { echo $((budget - ($(date +%s) - start))); }
say() { echo "gpu-bench: $*" >&2; }

size="${SIZE:-full}"
dtype="${DTYPE:-bf16}"
# ALLOW_CPU=1 SIZE=tiny runs the same steps on a CPU: a rehearsal of the script, not a GPU figure.
if [ "${ALLOW_CPU:-0}" != 1 ] && ! "$py" -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 3)'; then
    say "$py has no torch that sees a GPU; set PYTHON to one that does"
    exit 3
fi
if ! "$py" -c 'import click, packaging, psutil, platformdirs, distro, rich, transformers' 2>/dev/null; then
    say "$py lacks rocmkit's dependencies or transformers: pip install click packaging psutil platformdirs distro rich transformers"
    exit 4
fi
device="$("$py" -c 'import torch; print(torch.cuda.get_device_name(0) if torch.cuda.is_available() else "cpu")')"
slug="$(echo "$device" | tr -c 'A-Za-z0-9\n' '-' | tr -s '-' | sed 's/-$//' | tr '[:upper:]' '[:lower:]')"
say "device: $device; budget ${budget}s"

# 0. the floor, cache and correctness checks, in two doctor runs so that one running out of time
#    (the step is killed, its JSON lost) does not take the other's figures with it.
step() {  # step NAME CAP_S ARGS...: one doctor run into $out/doctor-l2-NAME-$slug.json
    local name="$1" cap="$2"; shift 2
    cap=$(( cap < $(left) ? cap : $(left) ))
    timeout "$cap" "$py" -m rocmkit doctor --level 2 "$@" --json >"$out/doctor-l2-$name-$slug.json" || \
        say "doctor level 2 ($name) ended with $? (a FAIL, a warning below a floor, or the ${cap}s step limit)"
}
checks=(--only env.caches --only env.apu_memory --only triton.vector_add --only triton.matmul
        --only compile.cache_speed)
gpus="$("$py" -c 'import torch; print(torch.cuda.device_count())')"
[ "${gpus:-0}" -ge 2 ] && checks+=(--only distributed.all_reduce)
step floors "${FLOORS_S:-120}" "${checks[@]}"
step correctness "${CORRECTNESS_S:-150}" --only compile.correctness --set compile.steps="${COMPILE_STEPS:-4}"
reports=()
for r in "$out/doctor-l2-floors-$slug.json" "$out/doctor-l2-correctness-$slug.json"; do
    [ -s "$r" ] && reports+=("$r")
done
if [ "${#reports[@]}" -gt 0 ]; then
    "$py" "$here/floors.py" "${reports[@]}" >"$tables/gpu-floors-$slug.md" && say "floors: $tables/gpu-floors-$slug.md"
fi

# 0b. hardware health: the facts, then the memory pattern test and the copy bandwidths.
hw_s="${HW_S:-120}"
hw_s=$(( hw_s < $(left) ? hw_s : $(left) ))
if [ "$hw_s" -gt 10 ]; then
    timeout "$hw_s" "$py" -m rocmkit doctor --level 3 --only 'hw.*' \
        --set memtest_fraction="${MEMTEST_FRACTION:-0.1}" --json >"$out/doctor-hw-$slug.json" || \
        say "doctor hw.* ended with $? (a FAIL: see the JSON; or the ${hw_s}s step limit)"
fi

# 1. doctor level 3, the models check only (the rest of level 3 is not what this session measures).
doctor_s=$(( $(left) * 2 / 5 ))
timeout "$doctor_s" "$py" -m rocmkit doctor --level 3 --only models.compile_speedup \
    --set models.suite=huggingface --set models.repeat=10 --set "models.size=$size" --json >"$out/doctor-l3-$slug.json" || \
    say "doctor level 3 ended with $? (a FAIL, or the ${doctor_s}s step limit)"

# 2. the suite subset, training with AMP bf16, full size; rows kept as they finish.
suite_s=$(( $(left) - 30 ))
results="$out/hf-train-$dtype-$slug.jsonl"
timeout "$suite_s" "$py" -m rocmkit bench models --suite huggingface --size "$size" --mode train \
    --dtype "$dtype" --models "$models" --repeat 20 --timeout 240 --results "$results" >/dev/null || \
    say "bench models ended with $? (a model failed, or the ${suite_s}s step limit: rows so far are kept)"

# 3. tables: Markdown and HTML of what finished, and the comparison with the MI250 line.
if [ -s "$results" ]; then
    "$py" -m rocmkit bench models --load "$results" --report markdown="$tables/gpu-$slug.md" \
        --report html="$out/hf-train-$dtype-$slug.html" >"$out/hf-train-$dtype-$slug.txt" || true
    "$py" -m rocmkit bench compare "$results" "$results" --html "$out/compare-$slug.html" >/dev/null || true
fi
# 4. jax: its own interpreter (a jax venv need not hold torch), a short step limit of its own.
jax_py="${JAX_PYTHON:-$py}"
if "$jax_py" -c 'import jax' 2>/dev/null; then
    jax_s="${JAX_STEP_S:-150}"
    timeout "$jax_s" "$py" -m rocmkit doctor --python "$jax_py" --framework jax --level 3 --only jax --json \
        >"$out/doctor-jax-$slug.json" || say "doctor --framework jax ended with $? (a FAIL, or the ${jax_s}s step limit)"
else
    say "no jax in $jax_py: the jax checks are skipped (set JAX_PYTHON to a venv's python made by 'rocmkit install --framework jax --venv V')"
fi
# 5. the companion libraries this Python has (xformers, flash-attn, bitsandbytes: docs/companions.md),
#    each import, build and one op against torch on the GPU; those not installed are skipped.
comp_s="${COMPANIONS_S:-90}"
comp_s=$(( comp_s < $(left) ? comp_s : $(left) ))
if [ "$comp_s" -gt 10 ]; then
    timeout "$comp_s" "$py" -m rocmkit doctor --level 1 --only companion --json >"$out/doctor-companions-$slug.json" || \
        say "doctor companion checks ended with $? (a FAIL, or the ${comp_s}s step limit)"
fi
say "done in $(( $(date +%s) - start ))s; tables in $tables/gpu-$slug.md and $out"
