#!/usr/bin/env python3
"""Writes tests/fixtures/rnn_reference.safetensors: PyTorch's RNN, LSTM, GRU and their cells on
fixed inputs, in float64 on the CPU, for tests/nn/rnn_reference_test.cpp.

    python3 tests/gen/rnn_reference.py tests/fixtures/rnn_reference.safetensors

Needs PyTorch (no GPU); uses the safetensors package when present, else writes the format itself
(tests/gen/safetensors_out.py). Every module is in training mode with dropout 0. For each case <m>:
    <m>.state.<name>   its state_dict (loads strictly into wick's module of the same options)
    <m>.in.<x>         its inputs (lengths as int64)
    <m>.out.<y>        its outputs: output (padded with zeros when packed), h_n, c_n
    <m>.w.<y>          the fixed weights of the loss sum((y * w.y).sum() for each output y)
    <m>.grad.<x>       the loss's gradient with respect to each floating input
    <m>.pgrad.<name>   ... and to each parameter
Cases and options (mirrored in the C++ test):
    rnn        RNN(3, 4, num_layers=2, nonlinearity="relu", bidirectional=True); input [5, 2, 3], h0 [4, 2, 4]
    lstm       LSTM(3, 5, num_layers=2, batch_first=True, bidirectional=True, proj_size=2);
               input [2, 4, 3], h0 [4, 2, 2], c0 [4, 2, 5]
    gru        GRU(3, 4, num_layers=2, bidirectional=True) on pack_padded_sequence(input [5, 4, 3],
               lengths [3, 5, 2, 4], enforce_sorted=False), h0 [4, 4, 4]; output through
               pad_packed_sequence
    lstm_cell  LSTMCell(3, 4); input [2, 3], h0 [2, 4], c0 [2, 4]
    gru_cell   GRUCell(3, 4); input [2, 3], h0 [2, 4]
    rnn_cell   RNNCell(3, 4) (tanh); input [3] (unbatched), h0 [4]
"""
import sys

import torch
from torch import nn
from torch.nn.utils import rnn as R

from safetensors_out import write as write_safetensors


def record(tensors, prefix, module, inputs, run):
    """Runs module on inputs (a dict); stores its state, inputs, outputs and the gradients of a
    fixed scalar loss with respect to its floating inputs and its parameters."""
    for k, v in module.state_dict().items():
        tensors[f"{prefix}.state.{k}"] = v.detach().clone()
    leaves = {}
    for k, v in inputs.items():
        tensors[f"{prefix}.in.{k}"] = v.clone()
        leaves[k] = v.clone().requires_grad_(True) if v.is_floating_point() else v
    outputs = run(module, leaves)
    loss = 0
    for k, y in outputs.items():
        w = torch.randn(y.shape, dtype=torch.float64)
        tensors[f"{prefix}.out.{k}"] = y.detach().clone()
        tensors[f"{prefix}.w.{k}"] = w
        loss = loss + (y * w).sum()
    loss.backward()
    for k, v in leaves.items():
        if v.is_floating_point():
            tensors[f"{prefix}.grad.{k}"] = v.grad.detach().clone()
    for k, p in module.named_parameters():
        tensors[f"{prefix}.pgrad.{k}"] = p.grad.detach().clone()


def main(path):
    torch.manual_seed(34)
    tensors = {}
    d = torch.float64

    m = nn.RNN(3, 4, num_layers=2, nonlinearity="relu", bidirectional=True).double()
    record(tensors, "rnn", m, {"input": torch.randn(5, 2, 3, dtype=d), "h0": torch.randn(4, 2, 4, dtype=d)},
           lambda m, x: dict(zip(("output", "h_n"), m(x["input"], x["h0"]))))

    m = nn.LSTM(3, 5, num_layers=2, batch_first=True, bidirectional=True, proj_size=2).double()

    def run_lstm(m, x):
        out, (h, c) = m(x["input"], (x["h0"], x["c0"]))
        return {"output": out, "h_n": h, "c_n": c}

    record(tensors, "lstm", m, {"input": torch.randn(2, 4, 3, dtype=d), "h0": torch.randn(4, 2, 2, dtype=d),
                                "c0": torch.randn(4, 2, 5, dtype=d)}, run_lstm)

    m = nn.GRU(3, 4, num_layers=2, bidirectional=True).double()

    def run_gru(m, x):
        packed = R.pack_padded_sequence(x["input"], x["lengths"], enforce_sorted=False)
        out, h = m(packed, x["h0"])
        padded, _ = R.pad_packed_sequence(out)
        return {"output": padded, "h_n": h}

    record(tensors, "gru", m, {"input": torch.randn(5, 4, 3, dtype=d), "lengths": torch.tensor([3, 5, 2, 4]),
                               "h0": torch.randn(4, 4, 4, dtype=d)}, run_gru)

    m = nn.LSTMCell(3, 4).double()

    def run_lstm_cell(m, x):
        h, c = m(x["input"], (x["h0"], x["c0"]))
        return {"h_n": h, "c_n": c}

    record(tensors, "lstm_cell", m, {"input": torch.randn(2, 3, dtype=d), "h0": torch.randn(2, 4, dtype=d),
                                     "c0": torch.randn(2, 4, dtype=d)}, run_lstm_cell)
    m = nn.GRUCell(3, 4).double()
    record(tensors, "gru_cell", m, {"input": torch.randn(2, 3, dtype=d), "h0": torch.randn(2, 4, dtype=d)},
           lambda m, x: {"h_n": m(x["input"], x["h0"])})
    m = nn.RNNCell(3, 4).double()
    record(tensors, "rnn_cell", m, {"input": torch.randn(3, dtype=d), "h0": torch.randn(4, dtype=d)},
           lambda m, x: {"h_n": m(x["input"], x["h0"])})

    write_safetensors(tensors, path, {"torch": torch.__version__, "generator": "tests/gen/rnn_reference.py"})


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "tests/fixtures/rnn_reference.safetensors")
