# Prints the PyTorch 1.13 values that tests/nn/nn_port_test.cpp compares against:
#   /usr/bin/python3 tests/gen/nn_port_gen.py
# Inputs are built from closed formulas (no random numbers) so the C++ test rebuilds them.
import torch
import torch.nn.functional as F

torch.set_printoptions(precision=10)


def show(name, t):
    print(name, [round(v, 10) for v in t.flatten().double().tolist()] if t.is_floating_point() else t.flatten().tolist())


# adaptive max pooling of x[n, c, h, w] = sin(1 + n 105 + c 35 + h 7 + w) over 5 x 7, to (3, 4)
x = torch.sin(1 + torch.arange(2 * 3 * 5 * 7, dtype=torch.float64)).view(2, 3, 5, 7)
v, i = F.adaptive_max_pool2d(x, (3, 4), return_indices=True)
show("amp2d_values", v)
show("amp2d_indices", i)
v, i = F.adaptive_max_pool1d(x[0], 3, return_indices=True)  # [3, 5, 7] read as [N=3, C=5, L=7]
show("amp1d_values", v)
show("amp1d_indices", i)

# embedding_bag of weight[r, d] = cos(r 3 + d) (6 x 3), input [1, 2, 4, 5, 4, 3, 2, 0], offsets [0, 2, 2, 5]
w = torch.cos(torch.arange(18, dtype=torch.float64)).view(6, 3)
inp = torch.tensor([1, 2, 4, 5, 4, 3, 2, 0])
off = torch.tensor([0, 2, 2, 5])
psw = torch.arange(1, 9, dtype=torch.float64) / 4
for mode in ["sum", "mean", "max"]:
    show("bag_" + mode, F.embedding_bag(inp, w, off, mode=mode))
    show("bag_" + mode + "_pad4", F.embedding_bag(inp, w, off, mode=mode, padding_idx=4))
# include_last_offset with a last offset before the end of the input: 1.13's CPU kernel divides
# the last bag's mean by the count up to the end of the input (0.928 / 6, not / 3) and corrupts
# the heap (free(): invalid next size), so it is not printed; the test checks it against loops.
show("bag_sum_psw", F.embedding_bag(inp, w, off, mode="sum", per_sample_weights=psw))

# InstanceNorm1d(3, track_running_stats=True), training, on y[n, c, l] = sin(n 12 + c 4 + l) ^ 3 (2 x 3 x 4)
m = torch.nn.InstanceNorm1d(3, track_running_stats=True, affine=True).double()
y = torch.sin(torch.arange(24, dtype=torch.float64)).pow(3).view(2, 3, 4)
with torch.no_grad():
    m.weight.copy_(torch.tensor([1.5, -0.5, 2.0], dtype=torch.float64))
    m.bias.copy_(torch.tensor([0.1, 0.2, -0.3], dtype=torch.float64))
show("in1d_out", m(y))
show("in1d_running_mean", m.running_mean)
show("in1d_running_var", m.running_var)
show("in1d_num_batches_tracked", m.num_batches_tracked)
m.eval()
show("in1d_eval", m(y))
