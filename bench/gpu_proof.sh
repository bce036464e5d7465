#!/usr/bin/env bash
# The learning proof at GPU scale, then the Qwen3-4B-shape training throughput, in one prepared run
# (issue 24; docs/benchmarks.md "The learning proof"). Run from the repository root on a machine with one
# CUDA GPU, PyTorch and transformers, and no network: every other Python package comes from the wheels in
# .whl/ (python 3.12, manylinux x86_64; how to fetch them: docs/training.md "The proof on a GPU").
#
#   bash bench/gpu_proof.sh                  # results in $OUT (or bench/out/gpu/)
#   PRESET=tiny DEVICE=cpu BENCH=smoke bash bench/gpu_proof.sh   # a dry run of this script on a CPU
#
# Budget (one H100): the proof ~6 minutes (data, teacher, training 3 minutes, evaluation), the throughput
# bench ~2 minutes; each is time-boxed so that what finished comes back even if the other does not.
set -uo pipefail
OUT=${OUT:-bench/out/gpu}
PRESET=${PRESET:-gpu}
DEVICE=${DEVICE:-cuda}
BENCH=${BENCH:-full}
PROOF_TIMEOUT=${PROOF_TIMEOUT:-420}
BENCH_TIMEOUT=${BENCH_TIMEOUT:-150}
PY=${PY:-python3}
mkdir -p "$OUT"
start=$(date +%s)
if ls .whl/*.whl >/dev/null 2>&1; then
  $PY -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
    || { echo "wheel install failed" | tee "$OUT/error.txt"; exit 1; }
  export PYTHONPATH=$PWD:/tmp/site
else
  export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH}
fi
export PYTHONUNBUFFERED=1 TOKENIZERS_PARALLELISM=false
echo "installed in $(( $(date +%s) - start )) s"
(nvidia-smi || true) > "$OUT/machine.txt" 2>&1
$PY -c "import torch, transformers; print('torch', torch.__version__, 'transformers', transformers.__version__, 'cuda', torch.cuda.is_available())" | tee -a "$OUT/machine.txt"

rm -rf /tmp/proof
timeout "$PROOF_TIMEOUT" $PY -c "from shoparena.cli import main; main()" train proof \
  --out /tmp/proof --preset "$PRESET" --device "$DEVICE" --workers 8 2>&1 | grep -v "Writing model shards\|Loading weights" | tee "$OUT/proof.log"
cp /tmp/proof/proof.json "$OUT/proof.json" 2>/dev/null || echo "no proof.json (see proof.log)"
cp /tmp/proof/metrics.jsonl "$OUT/proof-metrics.jsonl" 2>/dev/null || true
echo "proof done at $(( $(date +%s) - start )) s"

if [ "$BENCH" = smoke ]; then
  timeout "$BENCH_TIMEOUT" $PY bench/train_gpu_bench.py --smoke 2>&1 | tail -30 | tee "$OUT/bench.log"
elif [ "$BENCH" != none ]; then
  timeout "$BENCH_TIMEOUT" $PY bench/train_gpu_bench.py --steps 3 --prompts 3 --group 6 --new-tokens 256 2>&1 \
    | tail -40 | tee "$OUT/bench.log"
fi
cp bench/out/train_gpu_bench.json "$OUT/train_gpu_bench.json" 2>/dev/null || true
echo "all done at $(( $(date +%s) - start )) s"
