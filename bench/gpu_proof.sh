#!/usr/bin/env bash
# The learning proof at GPU scale and the Qwen3-4B-shape training throughput, in one prepared command of
# under ten minutes (issue 24; docs/training.md "The proof on a GPU", docs/benchmarks.md). Run from the
# repository root on a machine with one CUDA GPU, PyTorch and transformers, and no network: every other
# Python package comes from the wheels in .whl/ (python 3.12, manylinux x86_64).
#
#   bash bench/gpu_proof.sh                  # results in $OUT (or bench/out/gpu/)
#   PRESET=tiny DEVICE=cpu BENCH=smoke WORKERS=1 WHEELS=none PY=.venv/bin/python bash bench/gpu_proof.sh
#                                            # a dry run of this script on a CPU
#
# Timeline on one H100: the throughput bench (bench/train_gpu_bench.py, ~2-3 minutes, GPU-bound) runs in
# the background while the proof generates its data and plays the teacher (CPU-bound); then the proof
# trains (2 minutes), evaluates, and runs RS and GRPO on top while its deadline allows. Every part is
# time-boxed and writes as it goes, so what finished comes back even if something runs long.
set -uo pipefail
OUT=${OUT:-bench/out/gpu}
PRESET=${PRESET:-gpu}
DEVICE=${DEVICE:-cuda}
BENCH=${BENCH:-full}
WORKERS=${WORKERS:-8}
WHEELS=${WHEELS:-.whl}
PY=${PY:-python3}
DEADLINE_MIN=${DEADLINE_MIN:-9.2}   # the proof skips RS/GRPO that would not end by then
HARD_STOP=${HARD_STOP:-570}         # seconds: the proof is killed here whatever it is doing
mkdir -p "$OUT"
start=$(date +%s)
if [ "$WHEELS" != none ] && ls "$WHEELS"/*.whl >/dev/null 2>&1; then
  $PY -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site "$WHEELS"/*.whl \
    || { echo "wheel install failed" | tee "$OUT/error.txt"; exit 1; }
  export PYTHONPATH=$PWD:/tmp/site
else
  export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH}
fi
export PYTHONUNBUFFERED=1 TOKENIZERS_PARALLELISM=false
echo "installed in $(( $(date +%s) - start )) s" | tee "$OUT/timeline.txt"
(nvidia-smi || true) > "$OUT/machine.txt" 2>&1
$PY -c "import torch, transformers; print('torch', torch.__version__, 'transformers', transformers.__version__, 'cuda', torch.cuda.is_available())" | tee -a "$OUT/machine.txt"

bench_pid=
if [ "$BENCH" = smoke ]; then
  (timeout 150 $PY bench/train_gpu_bench.py --smoke > "$OUT/bench.log" 2>&1; echo "bench ended $(( $(date +%s) - start )) s" >> "$OUT/timeline.txt") &
  bench_pid=$!
elif [ "$BENCH" != none ]; then
  (timeout 300 $PY bench/train_gpu_bench.py --steps 3 --prompts 3 --group 6 --new-tokens 256 > "$OUT/bench.log" 2>&1;
   echo "bench ended $(( $(date +%s) - start )) s" >> "$OUT/timeline.txt") &
  bench_pid=$!
fi

rm -rf /tmp/proof
timeout "$HARD_STOP" $PY -c "from shoparena.cli import main; main()" train proof \
  --out /tmp/proof --preset "$PRESET" --device "$DEVICE" --workers "$WORKERS" --deadline-minutes "$DEADLINE_MIN" 2>&1 \
  | grep --line-buffered -v "Writing model shards\|Loading weights" | tee "$OUT/proof.log"
echo "proof ended $(( $(date +%s) - start )) s" | tee -a "$OUT/timeline.txt"
cp /tmp/proof/proof.json "$OUT/proof.json" 2>/dev/null || echo "no proof.json (see proof.log)"
cp /tmp/proof/metrics.jsonl "$OUT/proof-metrics.jsonl" 2>/dev/null || true
[ -n "$bench_pid" ] && wait "$bench_pid"
tail -40 "$OUT/bench.log" 2>/dev/null
cp bench/out/train_gpu_bench.json "$OUT/train_gpu_bench.json" 2>/dev/null || true
echo "all done at $(( $(date +%s) - start )) s" | tee -a "$OUT/timeline.txt"
