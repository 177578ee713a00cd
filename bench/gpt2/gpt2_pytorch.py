#!/usr/bin/env python3
"""The PyTorch twin of wick-gpt's GPT-2 small training step, for bench/gpt2: the same model
(12 layers, 12 heads, 768 wide, context 1024, vocabulary 50304, tied embedding and head, GPT-2's
initialisation), bf16 autocast, F.scaled_dot_product_attention (causal), fused AdamW (decay 0.1
on the 2-D weights only, betas 0.9/0.95), gradient clipping at 1.0, on random tokens.

    python3 bench/gpt2/gpt2_pytorch.py --mode eager|compile [--batch 32] [--seq 1024] [--steps 30]

Prints one line of JSON: tokens/s and ms a step (the median of the steps after the warm-up),
peak GPU memory (GiB) and the MFU against --peak-tflops (dense bf16; 989 for an H100 SXM).
"""
import argparse
import json
import math
import statistics
import time

import torch
import torch.nn as nn
import torch.nn.functional as F


class Block(nn.Module):
    def __init__(self, d, h):
        super().__init__()
        self.h = h
        self.ln_1 = nn.LayerNorm(d)
        self.c_attn = nn.Linear(d, 3 * d)
        self.c_proj = nn.Linear(d, d)
        self.ln_2 = nn.LayerNorm(d)
        self.c_fc = nn.Linear(d, 4 * d)
        self.mlp_proj = nn.Linear(4 * d, d)

    def forward(self, x):
        b, t, d = x.shape
        q, k, v = self.c_attn(self.ln_1(x)).split(d, dim=2)
        q, k, v = (z.view(b, t, self.h, d // self.h).transpose(1, 2) for z in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.c_proj(y.transpose(1, 2).reshape(b, t, d))
        return x + self.mlp_proj(F.gelu(self.c_fc(self.ln_2(x)), approximate="tanh"))


class GPT(nn.Module):
    def __init__(self, vocab=50304, block=1024, n_layer=12, n_head=12, d=768):
        super().__init__()
        self.wte = nn.Embedding(vocab, d)
        self.wpe = nn.Embedding(block, d)
        self.h = nn.ModuleList(Block(d, n_head) for _ in range(n_layer))
        self.ln_f = nn.LayerNorm(d)
        self.lm_head = nn.Linear(d, vocab, bias=False)
        self.lm_head.weight = self.wte.weight
        for name, p in self.named_parameters():
            if name.endswith("bias"):
                nn.init.zeros_(p)
            elif p.dim() == 2:
                # GPT-2: N(0, 0.02), the residual projections scaled by 1/sqrt(2 * layers).
                std = 0.02 / math.sqrt(2 * n_layer) if name.endswith(("c_proj.weight", "mlp_proj.weight")) else 0.02
                nn.init.normal_(p, 0.0, std)

    def forward(self, idx, targets):
        t = idx.size(1)
        x = self.wte(idx) + self.wpe(torch.arange(t, device=idx.device))
        for block in self.h:
            x = block(x)
        logits = self.lm_head(self.ln_f(x))
        return F.cross_entropy(logits.view(-1, logits.size(-1)), targets.reshape(-1))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--mode", choices=["eager", "compile"], default="eager")
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--seq", type=int, default=1024)
    ap.add_argument("--steps", type=int, default=30)
    ap.add_argument("--warmup", type=int, default=10)
    ap.add_argument("--peak-tflops", type=float, default=989.0)
    a = ap.parse_args()
    torch.manual_seed(0)
    dev = "cuda"
    torch.backends.cuda.matmul.allow_tf32 = True
    model = GPT().to(dev)
    decay = [p for p in model.parameters() if p.dim() >= 2]
    no_decay = [p for p in model.parameters() if p.dim() < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.1}, {"params": no_decay, "weight_decay": 0.0}],
                            lr=6e-4, betas=(0.9, 0.95), eps=1e-8, fused=True)
    step_model = torch.compile(model) if a.mode == "compile" else model
    n_params = sum(p.numel() for p in model.parameters())
    g = torch.Generator(device=dev).manual_seed(1)

    def step():
        x = torch.randint(0, 50257, (a.batch, a.seq + 1), device=dev, generator=g)
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = step_model(x[:, :-1], x[:, 1:])
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        opt.zero_grad(set_to_none=True)
        return loss

    for _ in range(a.warmup):
        step()
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    times = []
    for _ in range(a.steps):
        t0 = time.perf_counter()
        loss = step()
        torch.cuda.synchronize()
        times.append(time.perf_counter() - t0)
    ms = statistics.median(times) * 1e3
    tokens = a.batch * a.seq
    # Training FLOPs a token: 6 N (the embedding of positions aside) plus attention's
    # 12 * layers * width * context (forward and backward of QK^T and AV, causal not halved).
    flops_per_token = 6 * (n_params - model.wpe.weight.numel()) + 12 * 12 * 768 * a.seq
    print(json.dumps({
        "impl": "pytorch-" + a.mode, "torch": torch.__version__, "batch": a.batch, "seq": a.seq,
        "ms_per_step": round(ms, 2), "tokens_per_s": round(tokens / ms * 1e3),
        "peak_gib": round(torch.cuda.max_memory_allocated() / 2**30, 2),
        "mfu": round(flops_per_token * tokens / (ms * 1e-3) / (a.peak_tflops * 1e12), 4),
        "loss": round(loss.item(), 4),
    }))


if __name__ == "__main__":
    main()
