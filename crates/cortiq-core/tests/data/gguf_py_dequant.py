#!/usr/bin/env python3
"""Append to gguf_py_dequant.json a case per GGML type named on the command line that the
file lacks: three blocks of random bytes, the blocks' f16 scales set to finite values, and
the values gguf-py (`gguf.quants.dequantize`, llama.cpp's Python package) decodes them to.
cortiq's decoders are tested against these (codec/tests.rs, unpack_matches_gguf_py_dequantize).
Needs `gguf` and `numpy` importable (e.g. `pip install gguf`).
Usage: python3 gguf_py_dequant.py Q5_1 [TYPE ...]"""
import json, os, random, struct, sys

import numpy as np
from gguf import GGMLQuantizationType, GGML_QUANT_SIZES
from gguf.quants import dequantize

# Offsets of each block's f16 scales (d, and m or dmin) in the types this script knows.
SCALES = {"Q5_1": (0, 2), "Q2_K": (80, 82), "Q3_K": (108,), "IQ4_NL": (0,), "IQ4_XS": (0,)}

path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "gguf_py_dequant.json")
cases = json.load(open(path))
rng = random.Random(52)
for name in sys.argv[1:]:
    t = GGMLQuantizationType[name]
    if any(c["ggml_type"] == int(t) for c in cases):
        continue
    block_len, block_bytes = GGML_QUANT_SIZES[t]
    raw = bytearray()
    for _ in range(3):
        blk = bytearray(rng.getrandbits(8) for _ in range(block_bytes))
        for at in SCALES[name]:
            blk[at:at + 2] = struct.pack("<e", rng.uniform(-0.05, 0.05))
        raw += blk
    values = dequantize(np.frombuffer(bytes(raw), dtype=np.uint8), t).astype(np.float32).ravel()
    cases.append({"ggml_type": int(t), "name": name, "hex": raw.hex(), "values": [float(v) for v in values]})
json.dump(cases, open(path, "w"))
