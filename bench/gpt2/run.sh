#!/usr/bin/env bash
# GPT-2 small's training step, wick-gpt against its PyTorch twin (eager and torch.compile), on
# one GPU in one run (docs/gpt.md, "Benchmarking against PyTorch"):
#   bash bench/gpt2/run.sh BUILD_DIR [batch] [steps]
# Prints each program's figures, then one table of tokens/s, ms a step, peak memory and MFU.
set -uo pipefail
build=${1:?usage: run.sh BUILD_DIR [batch] [steps]}
batch=${2:-32} steps=${3:-60}
here=$(cd "$(dirname "$0")" && pwd)
out=$(mktemp -d)
peak=${PEAK_TFLOPS:-989}
"$build/bin/wick-gpt" train --model gpt2 --synthetic --device cuda --amp bf16 --batch-size "$batch" \
  --max-steps "$steps" --eval-every 100000 --peak-tflops "$peak" --out "$out/wick" >"$out/wick.log" 2>&1
echo "wick-gpt rc=$?"
for mode in eager compile; do
  python3 "$here/gpt2_pytorch.py" --mode $mode --batch "$batch" --steps 30 --peak-tflops "$peak" \
    >"$out/torch_$mode.log" 2>&1
  echo "pytorch $mode rc=$?"
done
python3 - "$out" <<'PY'
import json, re, sys
out = sys.argv[1]
rows = []
w = open(f"{out}/wick.log").read()
m = re.search(r"speed: ([0-9.]+) ms a step, ([0-9]+) tokens/s(?:, MFU ([0-9.]+)%)?", w)
mem = re.search(r"peak GPU memory: ([0-9]+) MiB", w)
if m:
    rows.append(("wick-gpt", float(m[2]), float(m[1]), int(mem[1]) / 1024 if mem else float("nan"),
                 float(m[3]) / 100 if m[3] else float("nan")))
else:
    print(w[-3000:])
for mode in ("eager", "compile"):
    text = open(f"{out}/torch_{mode}.log").read()
    try:
        j = json.loads(text.strip().splitlines()[-1])
        rows.append((j["impl"], j["tokens_per_s"], j["ms_per_step"], j["peak_gib"], j["mfu"]))
    except Exception:
        print(text[-3000:])
print("| program | tokens/s | ms a step | peak GiB | MFU | wick / this |")
print("|---|---|---|---|---|---|")
base = rows[0][1] if rows and rows[0][0] == "wick-gpt" else None
for name, tps, ms, gib, mfu in rows:
    ratio = f"{base / tps:.2f}" if base else "-"
    print(f"| {name} | {tps:.0f} | {ms:.1f} | {gib:.1f} | {100 * mfu:.1f}% | {ratio} |")
PY
rm -rf "$out"
