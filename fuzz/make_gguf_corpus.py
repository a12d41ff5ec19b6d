#!/usr/bin/env python3
"""Writes the seed corpus for gguf_reader_fuzz into fuzz/corpus/gguf/.

Seeds are small valid GGUF files (every value type, every common tensor type, a model-shaped
file derived from a golden model's header) and near-valid ones, each broken in one way the
reader must refuse. Written with struct, independently of Strata's writer; layout as in
src/gguf/gguf_file.h. Usage: fuzz/make_gguf_corpus.py (from anywhere; overwrites the seeds).
"""
import os
import struct

from seed_corpus import ROOT, write_seeds

GOLDEN = os.path.join(ROOT, "tests", "golden", "synthetic", "models", "tiny-qwen3moe-q4_k_m.gguf")

SCALAR = {0: "B", 1: "b", 2: "H", 3: "h", 4: "I", 5: "i", 6: "f", 7: "B", 10: "Q", 11: "q", 12: "d"}
# ggml type id -> (block size, bytes per block), for the types the seeds use.
TENSOR_TYPES = {0: (1, 4), 1: (1, 2), 2: (32, 18), 6: (32, 22), 8: (32, 34), 12: (256, 144),
                14: (256, 210), 20: (32, 18), 30: (1, 2)}


def string(text):
    data = text if isinstance(text, bytes) else text.encode()
    return struct.pack("<Q", len(data)) + data


def value(vtype, v):
    if vtype == 8:
        return string(v)
    if vtype == 9:
        etype, items = v
        body = b"".join(value(etype, item) for item in items)
        return struct.pack("<IQ", etype, len(items)) + body
    return struct.pack("<" + SCALAR[vtype], v)


def pad(data, alignment):
    return data + b"\0" * (-len(data) % alignment)


def gguf(kvs, tensors, alignment=32, version=3, data_fill=0x5A):
    """kvs: [(key, vtype, value)]; tensors: [(name, shape, type_id)] laid out like ggml."""
    out = b"GGUF" + struct.pack("<IQQ", version, len(tensors), len(kvs))
    for key, vtype, v in kvs:
        out += string(key) + struct.pack("<I", vtype) + value(vtype, v)
    offset, blobs = 0, []
    for name, shape, type_id in tensors:
        block, type_size = TENSOR_TYPES[type_id]
        n_bytes = shape[0] // block * type_size
        for dim in shape[1:]:
            n_bytes *= dim
        out += string(name) + struct.pack("<I", len(shape))
        out += b"".join(struct.pack("<q", d) for d in shape) + struct.pack("<IQ", type_id, offset)
        blobs.append(pad(bytes([data_fill]) * n_bytes, alignment))
        offset += len(blobs[-1])
    return pad(out, alignment) + b"".join(blobs)


def every_type():
    kvs = [("u8", 0, 255), ("i8", 1, -1), ("u16", 2, 65535), ("i16", 3, -2), ("u32", 4, 7),
           ("i32", 5, -7), ("f32", 6, 0.5), ("bool", 7, 1), ("str", 8, "qwen3moe"),
           ("u64", 10, 2**64 - 1), ("i64", 11, -(2**63)), ("f64", 12, 1e-300)]
    for etype, items in [(0, [1, 2]), (1, [-1]), (2, [3]), (3, [-3]), (4, [4, 5]), (5, [-5, 6]),
                         (6, [1.5, -2.0]), (7, [0, 1]), (8, ["a", "", "\u0120the"]),
                         (10, [2**63]), (11, [-4]), (12, [0.25]), (8, [])]:
        kvs.append((f"arr.{etype}.{len(items)}", 9, (etype, items)))
    return gguf(kvs, [])


def all_tensor_types():
    tensors = [(f"t{type_id}", [block * 2, 3], type_id)
               for type_id, (block, _) in sorted(TENSOR_TYPES.items())]
    tensors += [("one_dim", [32], 0), ("four_dims", [32, 2, 1, 2], 8), ("empty", [0, 4], 0)]
    return gguf([("general.alignment", 4, 64), ("general.architecture", 8, "test")], tensors,
                alignment=64)


def read_golden_header(path):
    """The golden file's metadata and tensor infos, as (kvs, tensors) for gguf()."""
    with open(path, "rb") as f:
        data = f.read()
    pos = 24
    n_tensors, n_kv = struct.unpack_from("<QQ", data, 8)

    def read(fmt):
        nonlocal pos
        values = struct.unpack_from("<" + fmt, data, pos)
        pos += struct.calcsize("<" + fmt)
        return values[0]

    def read_string():
        nonlocal pos
        length = read("Q")
        pos += length
        return data[pos - length:pos]

    def read_value(vtype):
        if vtype == 8:
            return read_string()
        if vtype == 9:
            etype, count = read("I"), read("Q")
            return (etype, [read_value(etype) for _ in range(count)])
        return read(SCALAR[vtype])

    kvs = []
    for _ in range(n_kv):
        key = read_string().decode()
        vtype = read("I")
        kvs.append((key, vtype, read_value(vtype)))
    tensors = []
    for _ in range(n_tensors):
        name = read_string().decode()
        shape = [read("q") for _ in range(read("I"))]
        tensors.append((name, shape, read("I")))
        read("Q")
    return kvs, tensors


def model_shaped():
    """The golden model's keys and tensor names with 24-entry vocabularies and one-block rows."""
    kvs, tensors = read_golden_header(GOLDEN)
    short_kvs = []
    for key, vtype, v in kvs:
        if vtype == 9:
            v = (v[0], v[1][:24])
        short_kvs.append((key, vtype, v))
    short_tensors = []
    for name, shape, type_id in tensors:
        block = TENSOR_TYPES[type_id][0]
        short_tensors.append((name, [block] + [min(d, 2) for d in shape[1:]], type_id))
    return gguf(short_kvs, short_tensors)


def patch(data, offset, packed):
    return data[:offset] + packed + data[offset + len(packed):]


def near_valid(model):
    one = gguf([("general.architecture", 8, "x")], [("a", [32, 2], 8)])
    info = one.index(b"\x01\x00\x00\x00\x00\x00\x00\x00a") + 9  # n_dims of tensor "a"
    two = gguf([], [("a", [32], 0), ("b", [32], 0)])
    b_offset = two.index(b"\x01\x00\x00\x00\x00\x00\x00\x00b") + 9 + 4 + 8 + 4
    return {
        "magic": b"GGUX" + one[4:],
        "version1": patch(one, 4, struct.pack("<I", 1)),
        "big_endian": patch(one, 4, struct.pack(">I", 3)),
        "huge_tensor_count": patch(one, 8, struct.pack("<Q", 2**63)),
        "huge_string": patch(one, 24, struct.pack("<Q", 2**62)),
        "five_dims": patch(one, info, struct.pack("<I", 5)),
        "unknown_type": patch(one, info + 4 + 16, struct.pack("<I", 77)),
        "misaligned": patch(one, info + 4 + 16 + 4, struct.pack("<Q", 16)),
        "past_eof": one[:-32],
        "overlap": patch(two, b_offset, struct.pack("<Q", 0)),
        "duplicate_key": gguf([("k", 0, 1), ("k", 0, 2)], []),
        "duplicate_tensor": gguf([], [("a", [32], 0), ("a", [32], 0)]),
        "alignment_3": gguf([("general.alignment", 4, 3)], []),
        "array_of_arrays": b"GGUF" + struct.pack("<IQQ", 3, 0, 1) + string("k")
        + struct.pack("<IIQ", 9, 9, 1) + struct.pack("<IQ", 4, 0),
        "model_cut_in_infos": model[:len(model) // 3],
        "model_cut_in_data": model[:len(model) - 100],
    }


def main():
    model = model_shaped()
    seeds = {
        "empty_v3": gguf([], []),
        "empty_v2": gguf([], [], version=2),
        "every_type": every_type(),
        "all_tensor_types": all_tensor_types(),
        "model_shaped": model,
    }
    seeds.update({"bad_" + name: data for name, data in near_valid(model).items()})
    write_seeds("gguf", seeds, suffix=".gguf")


if __name__ == "__main__":
    main()
