#!/usr/bin/env python3
# Writes the seed corpora of tests/fuzz/corpus/<target>/ (valid and near-valid inputs); run it
# after changing an input layout. Standard library only.
import base64
import gzip
import json
import os
import struct
import zlib

HERE = os.path.dirname(os.path.abspath(__file__))


def write(target, name, data):
    path = os.path.join(HERE, "corpus", target, name)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(data if isinstance(data, bytes) else data.encode())


def npy(descr, shape, body, fortran=False, version=1):
    dims = "".join(f"{d}," for d in shape) if len(shape) == 1 else ",".join(str(d) for d in shape)
    header = "{'descr': '%s', 'fortran_order': %s, 'shape': (%s), }" % (descr, fortran, dims)
    length_bytes = 2 if version == 1 else 4
    pad = -(10 + length_bytes - 2 + len(header) + 1) % 64
    header = (header + " " * pad + "\n").encode()
    length = struct.pack("<H" if version == 1 else "<I", len(header))
    return b"\x93NUMPY" + bytes([version, 0]) + length + header + body


def npy_seeds():
    write("fuzz_npy", "f4_2x3", npy("<f4", (2, 3), struct.pack("<6f", 1, 2, 3, 4, 5, 6)))
    write("fuzz_npy", "f8_big_fortran_3x2", npy(">f8", (3, 2), struct.pack(">6d", 1, -2, 3.5, 0, 1e300, -0.0), True))
    write("fuzz_npy", "i8_scalar", npy("<i8", (), struct.pack("<q", -7)))
    write("fuzz_npy", "b1_4", npy("|b1", (4,), bytes([0, 1, 1, 0])))
    write("fuzz_npy", "f2_2x2", npy("<f2", (2, 2), struct.pack("<4e", 0.5, -1, 65504, 0)))
    write("fuzz_npy", "i4_3_v2", npy("<i4", (3,), struct.pack("<3i", 1, -1, 2**31 - 1), version=2))
    write("fuzz_npy", "f4_empty_0x5", npy("<f4", (0, 5), b""))
    write("fuzz_npy", "truncated_body", npy("<f4", (2, 3), struct.pack("<5f", 1, 2, 3, 4, 5)))
    write("fuzz_npy", "huge_shape", npy("<f8", (1 << 40, 1 << 30), b"\0" * 8))


def idx(type_code, dims, body):
    return bytes([0, 0, type_code, len(dims)]) + b"".join(struct.pack(">I", d) for d in dims) + body


def idx_seeds():
    write("fuzz_idx", "ubyte_2x3", idx(0x08, (2, 3), bytes(range(6))))
    write("fuzz_idx", "int32_3", idx(0x0C, (3,), struct.pack(">3i", 1, -2, 2**31 - 1)))
    write("fuzz_idx", "float64_1", idx(0x0E, (1,), struct.pack(">d", 0.25)))
    write("fuzz_idx", "int16_2x2_gz", gzip.compress(idx(0x0B, (2, 2), struct.pack(">4h", 1, -1, 300, 0)), mtime=0))
    write("fuzz_idx", "truncated", idx(0x0D, (4,), struct.pack(">3f", 1, 2, 3)))
    write("fuzz_idx", "images_gz", gzip.compress(idx(0x08, (2, 4, 4), bytes(32)), mtime=0))


SEP = b"\n--next-file--\n"


def manifest(kernel, bias, kernel_shape, bias_dtype="bfloat16"):
    """core/CHECKPOINT.md's manifest for dense/kernel (float) and dense/bias, given their files."""
    def entry(name, data, dtype, shape):
        return ('{"name": "%s", "file": "%s.npy", "dtype": "%s", "shape": %s, "bytes": %d, "crc32": %d}'
                % (name, name, dtype, list(shape), len(data), zlib.crc32(data)))
    return ('{"format": "dagrad checkpoint", "version": 1, "step": 3, "metadata": {"epoch": "1"}, '
            '"variables": [%s, %s]}' % (entry("dense/kernel", kernel, "float", kernel_shape),
                                        entry("dense/bias", bias, bias_dtype, (3,)))).encode()


def checkpoint_seeds():
    kernel = npy("<f4", (2, 3), struct.pack("<6f", 1, 2, 3, 4, 5, 6))
    bias = npy("<f4", (3,), struct.pack("<3f", 0.5, -0.5, 0))
    write("fuzz_checkpoint", "valid", manifest(kernel, bias, (2, 3)) + SEP + kernel + SEP + bias)
    transposed = npy("<f4", (3, 2), struct.pack("<6f", *range(6)))
    write("fuzz_checkpoint", "kernel_transposed",
          manifest(transposed, bias, (3, 2)) + SEP + transposed + SEP + bias)
    bias64 = npy("<f8", (3,), struct.pack("<3d", 1, 2, 3))
    write("fuzz_checkpoint", "bias_float64", manifest(kernel, bias64, (2, 3), "double") + SEP + kernel + SEP + bias64)
    write("fuzz_checkpoint", "bias_missing", manifest(kernel, bias, (2, 3)) + SEP + kernel)
    write("fuzz_checkpoint", "kernel_truncated", manifest(kernel, bias, (2, 3)) + SEP + kernel[:-4] + SEP + bias)


def attrs_seeds():
    seeds = {
        "conv2d_valid": "Conv2D\n@1,5,5,1\n@3,3,1,1\nstrides=1,1,1,1\npadding=VALID",
        "conv2d_explicit": "Conv2D\n@2,7,7,3\n@3,3,3,4\nstrides=1,2,2,1\npadding=EXPLICIT\n"
                           "explicit_paddings=0,0,1,2,0,1,0,0\ndilations=1,1,1,1\nT=float",
        "conv2d_nchw": "Conv2D\n@1,2,6,6\n@3,3,2,2\nstrides=1,1,2,2\npadding=SAME\ndata_format=NCHW",
        "backprop_input_v2": "Conv2DBackpropInputV2\n@1,5,5,1\n@3,3,1,1\n@1,3,3,1\nstrides=1,1,1,1\npadding=VALID",
        "backprop_filter": "Conv2DBackpropFilter\n@1,5,5,1\n@4\n@1,3,3,1\nstrides=1,1,1,1\npadding=VALID",
        "max_pool_same": "MaxPool\n@1,4,4,1\nksize=1,2,2,1\nstrides=1,2,2,1\npadding=SAME",
        "avg_pool_grad": "AvgPoolGrad\n@4\n@1,2,2,1\nksize=1,2,2,1\nstrides=1,2,2,1\npadding=VALID\nT=double",
        "placeholder": "Placeholder\nshape=?,28,28,1\ndtype=bfloat16",
        "variable": "VariableV2\nshape=[2,3]\ndtype=float\nshared_name=dense/kernel",
        "add_n": "AddN\n@2,2\n@2,2\n@2,?",
        "sum_keep_dims": "Sum\n@2,3\n@1\nkeep_dims=true\nTidx=int64",
        "cast": "Cast\n@2,3\nDstT=int32",
        "apply_adam": "ApplyAdam\n@3\n@3\n@3\n@\n@\n@\n@\n@\n@\n@3\nuse_locking=false\nuse_nesterov=True",
    }
    for name, text in seeds.items():
        write("fuzz_attrs", name, text)


# fuzz_ops: see the layout at the top of fuzz_ops.cpp. Dtype indices follow each op's allowed list
# (half, bfloat16, float, double, ...); pooling and conv take float (2).
FLOAT = 2


def shape(*dims):
    return bytes([len(dims), *dims])


def default():
    return bytes([0])


def ints(*values):
    return bytes([1, len(values), *[v if v >= 0 else 0xDF - v for v in values]])


def string(index):
    return bytes([1, index])


def conv_attrs(strides, padding, explicit=None, nchw=False, dilations=None):
    out = ints(*strides) + default() + string(padding)
    out += ints(*explicit) if explicit else default()
    out += string(1) if nchw else default()
    out += ints(*dilations) if dilations else default()
    return out


def pool_attrs(ksize, strides, padding, explicit_allowed, explicit=None):
    out = ints(*ksize) + ints(*strides) + string(padding)
    if explicit_allowed:
        out += ints(*explicit) if explicit else default()
    return out + default()


def ops_seeds():
    seeds = {
        "conv2d_valid": b"Conv2D\0" + bytes([FLOAT, 7]) + shape(1, 5, 5, 2) + shape(3, 3, 2, 3) +
                        conv_attrs((1, 1, 1, 1), 1),
        "conv2d_same_strided": b"Conv2D\0" + bytes([FLOAT, 3]) + shape(2, 7, 6, 3) + shape(3, 2, 3, 4) +
                               conv_attrs((1, 2, 3, 1), 0),
        "conv2d_explicit_dilated": b"Conv2D\0" + bytes([0, 5]) + shape(1, 6, 6, 2) + shape(2, 2, 2, 2) +
                                   conv_attrs((1, 1, 1, 1), 2, (0, 0, 1, 2, 0, 1, 0, 0), dilations=(1, 2, 2, 1)),
        "conv2d_nchw": b"Conv2D\0" + bytes([FLOAT, 9]) + shape(1, 2, 6, 6) + shape(3, 3, 2, 2) +
                       conv_attrs((1, 1, 2, 2), 0, nchw=True),
        "backprop_input": b"Conv2DBackpropInput\0" + bytes([FLOAT, 1]) + shape(4) + bytes([1, 5, 5, 2]) +
                          shape(3, 3, 2, 3) + shape(1, 3, 3, 3) + conv_attrs((1, 1, 1, 1), 1),
        "backprop_input_v2_strided": b"Conv2DBackpropInputV2\0" + bytes([3, 2]) + shape(1, 7, 7, 1) +
                                     shape(3, 3, 1, 2) + shape(1, 3, 3, 2) + conv_attrs((1, 2, 2, 1), 1),
        "backprop_filter": b"Conv2DBackpropFilter\0" + bytes([FLOAT, 4]) + shape(2, 5, 5, 1) + shape(4) +
                           bytes([3, 3, 1, 2]) + shape(2, 5, 5, 2) + conv_attrs((1, 1, 1, 1), 0),
        "backprop_filter_v2": b"Conv2DBackpropFilterV2\0" + bytes([1, 6]) + shape(1, 6, 6, 2) + shape(2, 2, 2, 3) +
                              shape(1, 3, 3, 3) + conv_attrs((1, 2, 2, 1), 1),
        "max_pool_same": b"MaxPool\0" + bytes([FLOAT, 2]) + shape(1, 5, 5, 2) +
                         pool_attrs((1, 2, 2, 1), (1, 2, 2, 1), 0, True),
        "max_pool_explicit": b"MaxPool\0" + bytes([3, 8]) + shape(2, 4, 5, 1) +
                             pool_attrs((1, 3, 3, 1), (1, 1, 2, 1), 2, True, (0, 0, 1, 1, 2, 0, 0, 0)),
        "avg_pool_valid": b"AvgPool\0" + bytes([FLOAT, 4]) + shape(1, 6, 6, 3) +
                          pool_attrs((1, 3, 3, 1), (1, 2, 2, 1), 1, False),
        "max_pool_grad": b"MaxPoolGrad\0" + bytes([FLOAT, 5]) + shape(1, 4, 4, 1) + shape(1, 2, 2, 1) +
                         shape(1, 2, 2, 1) + pool_attrs((1, 2, 2, 1), (1, 2, 2, 1), 1, True),
        "max_pool_grad_grad": b"MaxPoolGradGrad\0" + bytes([0, 5]) + shape(1, 4, 4, 2) + shape(1, 2, 2, 2) +
                              shape(1, 4, 4, 2) + pool_attrs((1, 2, 2, 1), (1, 2, 2, 1), 1, True),
        "avg_pool_grad": b"AvgPoolGrad\0" + bytes([FLOAT, 6]) + shape(4) + bytes([1, 4, 4, 1]) +
                         shape(1, 2, 2, 1) + pool_attrs((1, 2, 2, 1), (1, 2, 2, 1), 1, False),
        "avg_pool_grad_same": b"AvgPoolGrad\0" + bytes([1, 6]) + shape(4) + bytes([2, 5, 3, 2]) +
                              shape(2, 3, 2, 2) + pool_attrs((1, 2, 2, 1), (1, 2, 2, 1), 0, False),
        "matmul": b"MatMul\0" + bytes([FLOAT, 1]) + shape(3, 4) + shape(4, 2) + bytes([1, 0, 1, 0]),
        "add_n": b"AddN\0" + bytes([FLOAT, 1, 2]) + shape(2, 3) + shape(2, 3),
        "sum_axis": b"Sum\0" + bytes([FLOAT, 0, 1]) + shape(2, 3, 4) + shape(2) + bytes([0, 2]) + bytes([1, 1]),
        "softmax": b"Softmax\0" + bytes([FLOAT, 2]) + shape(3, 5),
        "bias_add_grad_nchw": b"BiasAddGrad\0" + bytes([FLOAT, 2]) + shape(2, 3, 4, 4) + bytes([1, 1]),
    }
    for name, data in seeds.items():
        write("fuzz_ops", name, data)


def graph_seeds():
    def node(name, op, attrs, inputs=(), controls=(), device=None):
        n = {"name": name, "op": op, "attrs": attrs, "inputs": list(inputs), "control_inputs": list(controls)}
        if device:
            n["device"] = device
        return n

    def graph(*nodes):
        return json.dumps({"format": "dagrad graph", "format_version": 1, "nodes": list(nodes)}, indent=1)

    f = {"type": "float"}
    x = node("x", "Placeholder", {"dtype": f, "shape": {"shape": [-1, 2]}})
    c = node("c", "Const", {"dtype": f, "value": {"tensor": {"dtype": "float", "shape": [2],
                                                            "data": base64.b64encode(struct.pack("<2f", 1.5, -0.0)).decode()}}})
    add = node("sum", "AddV2", {"T": f}, ["x:0", "c:0"], device="cuda:1")
    done = node("done", "NoOp", {}, controls=["sum"])
    write("fuzz_graph", "add", graph(x, c, add, done))
    h = node("h", "Const", {"dtype": {"type": "half"}, "value": {"tensor": {"dtype": "half", "shape": [3],
                                                                           "data": base64.b64encode(struct.pack("<3H", 0x7e01, 0x8000, 0x3c00)).decode()}}})
    write("fuzz_graph", "half_const", graph(h, node("i", "Identity", {"T": {"type": "half"}}, ["h:0"])))
    v = node("v", "VariableV2", {"dtype": f, "shape": {"shape": [2]}, "container": {"string": ""}, "shared_name": {"string": ""}})
    write("fuzz_graph", "assign", graph(v, c, node("a", "Assign", {"T": f}, ["v:0", "c:0"])))
    write("fuzz_graph", "forward_reference", graph(node("i", "Identity", {"T": f}, ["x:0"]), x))
    write("fuzz_graph", "model_manifest", '{"format": "dagrad model", "format_version": 1, "inputs": {"x": "x:0"}, "outputs": {"y": "sum:0"}}')


if __name__ == "__main__":
    npy_seeds()
    idx_seeds()
    checkpoint_seeds()
    attrs_seeds()
    ops_seeds()
    graph_seeds()
