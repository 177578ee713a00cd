#!/usr/bin/env python3
"""Writes tests/fixtures/transformer_reference.safetensors: PyTorch's MultiheadAttention,
TransformerEncoderLayer and TransformerDecoderLayer on fixed inputs, in float64 on the CPU, for
tests/nn/transformer_reference_test.cpp.

    python3 tests/gen/transformer_reference.py tests/fixtures/transformer_reference.safetensors

Needs PyTorch (no GPU); uses the safetensors package when present, else writes the format here
(an 8-byte little-endian header length, the JSON header, then the tensors' bytes). Every module
is in training mode with dropout 0 (so no fused inference path runs). For each module <m>:
    <m>.<name>       its state_dict (loads strictly into wick's module of the same options)
    <m>.in.<x>       its inputs (masks as float64 0/1: 1 is masked out)
    <m>.out          its output (and <m>.weights, MultiheadAttention's averaged weights)
    <m>.w, <m>.ww    the fixed weights of the loss (out * w).sum() (+ (weights * ww).sum())
    <m>.grad.<x>     the loss's gradient with respect to each floating input
Modules and options (mirrored in the C++ test):
    mha      MultiheadAttention(8, 2, batch_first=True); query [2, 3, 8], key and value [2, 4, 8],
             key_padding_mask [2, 4], attn_mask float [3, 4]; need_weights, averaged
    mha_kv   MultiheadAttention(8, 2, kdim=5, vdim=6); query [3, 2, 8], key [4, 2, 5],
             value [4, 2, 6], bool attn_mask [3, 4]; need_weights=False (the attention path)
    enc      TransformerEncoderLayer(8, 2, dim_feedforward=16, dropout=0.0, activation="gelu");
             src [5, 2, 8], src_mask the causal mask, src_key_padding_mask [2, 5]
    dec      TransformerDecoderLayer(8, 2, dim_feedforward=16, dropout=0.0, batch_first=True,
             norm_first=True); tgt [2, 3, 8], memory [2, 5, 8], tgt_mask causal,
             memory_key_padding_mask [2, 5]
"""
import sys

import torch
from torch import nn

from safetensors_out import write as write_safetensors


def padding_mask(rows, cols):
    m = torch.zeros(rows, cols, dtype=torch.bool)
    m[0, cols - 1] = True
    m[rows - 1, 1] = True
    return m


def record(tensors, prefix, module, inputs, run):
    """Runs module on inputs (a dict), stores its state, inputs, outputs and the gradients of a
    fixed scalar loss with respect to its floating inputs."""
    for k, v in module.state_dict().items():
        tensors[prefix + "." + k] = v.detach().clone()
    leaves = {}
    for k, v in inputs.items():
        tensors[prefix + ".in." + k] = v.double()
        leaves[k] = v.clone().requires_grad_(True) if v.is_floating_point() else v
    out, weights = run(module, leaves)
    w = torch.randn(out.shape, dtype=torch.float64)
    loss = (out * w).sum()
    tensors[prefix + ".out"] = out.detach()
    tensors[prefix + ".w"] = w
    if weights is not None:
        ww = torch.randn(weights.shape, dtype=torch.float64)
        loss = loss + (weights * ww).sum()
        tensors[prefix + ".weights"] = weights.detach()
        tensors[prefix + ".ww"] = ww
    loss.backward()
    for k, v in leaves.items():
        if v.is_floating_point() and v.requires_grad:
            tensors[prefix + ".grad." + k] = v.grad.detach()


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else "tests/fixtures/transformer_reference.safetensors"
    torch.manual_seed(2024)
    torch.set_default_dtype(torch.float64)
    tensors = {}

    mha = nn.MultiheadAttention(8, 2, batch_first=True)
    with torch.no_grad():  # non-zero biases, so that they matter
        mha.in_proj_bias.uniform_(-0.5, 0.5)
        mha.out_proj.bias.uniform_(-0.5, 0.5)
    record(tensors, "mha", mha,
           {"query": torch.randn(2, 3, 8), "key": torch.randn(2, 4, 8), "value": torch.randn(2, 4, 8),
            "key_padding_mask": padding_mask(2, 4), "attn_mask": torch.randn(3, 4)},
           lambda m, x: m(x["query"], x["key"], x["value"], key_padding_mask=x["key_padding_mask"],
                          need_weights=True, attn_mask=x["attn_mask"]))

    mha_kv = nn.MultiheadAttention(8, 2, kdim=5, vdim=6)
    with torch.no_grad():
        mha_kv.in_proj_bias.uniform_(-0.5, 0.5)
    attn_mask = torch.rand(3, 4) < 0.4
    attn_mask[:, 0] = False  # every query attends key 0
    record(tensors, "mha_kv", mha_kv,
           {"query": torch.randn(3, 2, 8), "key": torch.randn(4, 2, 5), "value": torch.randn(4, 2, 6),
            "attn_mask": attn_mask},
           lambda m, x: (m(x["query"], x["key"], x["value"], attn_mask=x["attn_mask"], need_weights=False)[0], None))

    enc = nn.TransformerEncoderLayer(8, 2, dim_feedforward=16, dropout=0.0, activation="gelu")
    record(tensors, "enc", enc,
           {"src": torch.randn(5, 2, 8), "src_key_padding_mask": padding_mask(2, 5)},
           lambda m, x: (m(x["src"], src_mask=nn.Transformer.generate_square_subsequent_mask(5),
                           src_key_padding_mask=x["src_key_padding_mask"]), None))

    dec = nn.TransformerDecoderLayer(8, 2, dim_feedforward=16, dropout=0.0, batch_first=True, norm_first=True)
    record(tensors, "dec", dec,
           {"tgt": torch.randn(2, 3, 8), "memory": torch.randn(2, 5, 8),
            "memory_key_padding_mask": padding_mask(2, 5)},
           lambda m, x: (m(x["tgt"], x["memory"], tgt_mask=nn.Transformer.generate_square_subsequent_mask(3),
                           memory_key_padding_mask=x["memory_key_padding_mask"]), None))

    tensors = {k: v.detach().to(torch.float64).contiguous() for k, v in tensors.items()}
    metadata = {"torch": torch.__version__}
    write_safetensors(tensors, out, metadata)
    print("wrote", out, "with", len(tensors), "tensors (torch", torch.__version__ + ")")


if __name__ == "__main__":
    main()
