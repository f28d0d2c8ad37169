"""Writes mcpool's shipped embedding model, `wordllama.bin`, from the
WordLlama wheel on PyPI (MIT, https://github.com/dleemiller/WordLlama):
its "l2_supercat" token vectors cut to their first DIM dimensions (the
model is trained so that a prefix of its dimensions is itself a model) and
quantised to int8 with one scale per token, and its Llama 2 BPE tokenizer's
vocabulary and merges.

    pip download wordllama==0.4.0.post1 --no-deps -d /tmp/wl
    python3 bench/search/embedding/convert.py /tmp/wl/wordllama-0.4.0.post1-*.whl \
        crates/mcpool-core/src/search/wordllama.bin

Standard library only. The format (little-endian), read by
`crates/mcpool-core/src/search/embedding.rs`:

    b"MCPWL001", u32 vocabulary size n, u32 dimensions d, u32 merges m
    n tokens: u16 byte length, UTF-8 bytes (in id order)
    m merges: u32 left id, u32 right id (in rank order)
    n f32 scales, then n x d int8 values (token i's vector: scale[i] * row[i])
"""

import json
import struct
import sys
import zipfile

DIM = 128
WEIGHTS = "wordllama/weights/l2_supercat_256.safetensors"
TOKENIZER = "wordllama/tokenizers/l2_supercat_tokenizer_config.json"


def main(wheel, out):
    with zipfile.ZipFile(wheel) as z:
        weights = z.read(WEIGHTS)
        tokenizer = json.loads(z.read(TOKENIZER))
    (header_len,) = struct.unpack_from("<Q", weights)
    header = json.loads(weights[8 : 8 + header_len])
    info = header["embedding.weight"]
    assert info["dtype"] == "F16", info
    n, full = info["shape"]
    start, end = info["data_offsets"]
    data = weights[8 + header_len + start : 8 + header_len + end]
    values = struct.unpack(f"<{n * full}e", data)

    model = tokenizer["model"]
    assert model["type"] == "BPE" and model["byte_fallback"], model["type"]
    vocab = sorted(model["vocab"].items(), key=lambda kv: kv[1])
    assert [i for _, i in vocab] == list(range(n)), "ids are 0..n"
    ids = dict(model["vocab"])
    merges = []
    for merge in model["merges"]:
        left, right = merge.split(" ") if isinstance(merge, str) else merge
        merges.append((ids[left], ids[right]))
        assert left + right in ids, merge

    body = bytearray(b"MCPWL001")
    body += struct.pack("<III", n, DIM, len(merges))
    for token, _ in vocab:
        raw = token.encode()
        body += struct.pack("<H", len(raw)) + raw
    for left, right in merges:
        body += struct.pack("<II", left, right)
    scales, rows = [], bytearray()
    for i in range(n):
        row = values[i * full : i * full + DIM]
        scale = max(abs(v) for v in row) / 127 or 1.0
        scales.append(scale)
        rows += struct.pack(f"<{DIM}b", *(max(-127, min(127, round(v / scale))) for v in row))
    body += struct.pack(f"<{n}f", *scales)
    body += rows
    with open(out, "wb") as f:
        f.write(body)
    print(f"{out}: {n} tokens, {DIM} dimensions, {len(merges)} merges, {len(body)} bytes")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
