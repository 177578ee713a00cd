"""Writes a dict of PyTorch tensors as a .safetensors file for the generator scripts here: with
the safetensors package when present, else the format directly (an 8-byte little-endian header
length, the JSON header padded to 8 bytes, then the tensors' bytes in name order)."""
import json
import struct

import torch

try:
    from safetensors.torch import save_file
except ImportError:
    save_file = None

DTYPES = {torch.float32: "F32", torch.float64: "F64", torch.int64: "I64"}


def write(tensors, path, metadata):
    if save_file is not None:
        # The package refuses views (a transposed output, a slice of a state): store copies.
        save_file({k: v.detach().cpu().contiguous() for k, v in tensors.items()}, path, metadata=metadata)
        return
    header, blobs, offset = {"__metadata__": metadata}, [], 0
    for name in sorted(tensors):
        t = tensors[name].detach().cpu().contiguous()
        data = t.numpy().tobytes()
        header[name] = {"dtype": DTYPES[t.dtype], "shape": list(t.shape),
                        "data_offsets": [offset, offset + len(data)]}
        blobs.append(data)
        offset += len(data)
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for b in blobs:
            f.write(b)
