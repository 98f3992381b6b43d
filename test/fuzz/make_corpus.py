#!/usr/bin/python3
"""Writes the seed corpus of the libFuzzer harnesses (test/fuzz/corpus/<reader>/), small valid
inputs of every kind the readers accept. The rank-file seeds come from halognn-partition:
    make_corpus.py [BUILD_BIN_DIR]
Regression inputs (findings, once fixed) live beside the seeds as regress-*, and rank files of
format version 2 (written by an earlier build, still read) as v2-*; this script does not touch
them."""
import io
import json
import os
import pickle
import subprocess
import sys
import tempfile
import zipfile
from collections import defaultdict

import numpy as np

here = os.path.dirname(os.path.abspath(__file__))
corpus = os.path.join(here, "corpus")


def put(reader, name, data):
    d = os.path.join(corpus, reader)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)


def npy_bytes(a, version=None):
    b = io.BytesIO()
    if version is None:
        np.save(b, a, allow_pickle=True)
    else:
        np.lib.format.write_array(b, a, version=version, allow_pickle=True)
    return b.getvalue()


# .npy: every dtype the reader knows, C and Fortran order, versions 1-3, 0-d and empty arrays.
arrays = {
    "f4": np.arange(12, dtype="<f4").reshape(3, 4),
    "f8": np.linspace(-1, 1, 5),
    "i1": np.array([-3, 0, 7], dtype="i1"),
    "i2": np.array([[1, -2], [3, 4]], dtype="<i2"),
    "i4": np.array([5, 6, 7], dtype="<i4"),
    "i8": np.array([[1, 2, 3]], dtype="<i8"),
    "u1": np.array([0, 255], dtype="u1"),
    "u2": np.array([65535], dtype="<u2"),
    "u4": np.array([1, 2], dtype="<u4"),
    "u8": np.array([2**63 + 1], dtype="<u8"),
    "b1": np.array([True, False, True]),
    "unicode": np.array(["cora", "ü", ""], dtype="<U4"),
    "fortran": np.asfortranarray(np.arange(24, dtype="<i4").reshape(2, 3, 4)),
    "scalar": np.array(3.5, dtype="<f4"),
    "empty": np.zeros((0, 5), dtype="<f4"),
    "object": np.array([1, "a", None], dtype=object),
}
for name, a in arrays.items():
    put("npy", name + ".npy", npy_bytes(a))
put("npy", "v2.npy", npy_bytes(np.arange(6, dtype="<i8"), version=(2, 0)))
put("npy", "v3.npy", npy_bytes(np.array(["x"], dtype="<U1"), version=(3, 0)))

# .npz: stored and deflated archives, several members, an object member.
for compress, name in ((False, "stored.npz"), (True, "deflated.npz")):
    b = io.BytesIO()
    (np.savez_compressed if compress else np.savez)(
        b, features=arrays["f4"], labels=arrays["i8"], names=arrays["unicode"])
    put("npz", name, b.getvalue())
b = io.BytesIO()
with zipfile.ZipFile(b, "w") as z:
    z.writestr("obj.npy", npy_bytes(arrays["object"]))
    z.writestr("notes.txt", b"not an array")
put("npz", "object.npz", b.getvalue())

# pickle: the structures dataset files hold, protocols 2 and 4.
values = {
    "list": [1, 2, 3, -4, 2**40],
    "dict": {"a": [1, 2], b"b": (3, 4.5), 7: None, "t": True},
    "defaultdict": defaultdict(list, {0: [1, 2], 1: [0]}),
    "ndarray": np.arange(6, dtype="<i4").reshape(2, 3),
    "ndarray_object": np.array([[1, 2], [3]], dtype=object),
    "strings": ["node", "ü", b"raw"],
    "nested": [[0, 1], (2, (3, 4)), {"k": [5]}],
}
for name, v in values.items():
    for proto in (2, 4):
        put("pickle", f"{name}.p{proto}.pkl", pickle.dumps(v, protocol=proto))
try:
    import scipy.sparse as sp
    m = sp.csr_matrix(np.array([[0, 1.5, 0], [2, 0, 0]], dtype=np.float32))
    put("pickle", "csr.p2.pkl", pickle.dumps(m, protocol=2))
except ImportError:
    pass

# JSON: a partition manifest, a dataset manifest, a training config, odd literals.
put("json", "partition_manifest.json", json.dumps({
    "format": "halognn-partition", "version": 2, "run_id": "00112233aabbccdd",
    "dataset": {"name": "t", "num_nodes": 4, "num_features": 2, "num_classes": 2,
                "multilabel": False}, "parts": 2,
    "files": [{"rank": 0, "file": "part-00000.bin", "bytes": 300, "crc32": 12345}]}).encode())
put("json", "config.json", json.dumps({"model": "gat", "layers": 2, "hidden": 8, "lr": 0.005,
                                       "quiet": True, "codec": "q4"}).encode())
put("json", "literals.json", b'[1e308, -0.0, "\\u00fc\\ud83d\\ude00", null, true, {"": []}]')

# Rank files: a tiny partition written by halognn-partition.
if len(sys.argv) > 1:
    binary = sys.argv[1]
    with tempfile.TemporaryDirectory() as t:
        subprocess.run([f"{binary}/halognn-data", "generate", "--out", f"{t}/ds", "--nodes", "24",
                        "--edges", "60", "--features", "3", "--classes", "2", "--seed", "2"],
                       check=True, stdout=subprocess.DEVNULL)
        subprocess.run([f"{binary}/halognn-partition", "--data", f"{t}/ds", "--parts", "2",
                        "--out", f"{t}/p"], check=True, stdout=subprocess.DEVNULL)
        # The same with sparsified features (sections SPCB and SPPO; k = 1: 2 positions a row).
        subprocess.run([f"{binary}/halognn-partition", "--data", f"{t}/ds", "--parts", "2",
                        "--out", f"{t}/ps", "--sparsify-features", "1"], check=True,
                       stdout=subprocess.DEVNULL)
        for r in (0, 1):
            with open(f"{t}/p/part-0000{r}.bin", "rb") as f:
                put("rank_file", f"part-0000{r}.bin", f.read())
            with open(f"{t}/ps/part-0000{r}.bin", "rb") as f:
                put("rank_file", f"sparsified-part-0000{r}.bin", f.read())
        # A sparsified dataset (halognn-data sparsify): its positions and codebook arrays for the
        # .npy readers (parse_npy and the block reader), its manifest for the JSON reader.
        subprocess.run([f"{binary}/halognn-data", "sparsify", "--data", f"{t}/ds", "--out",
                        f"{t}/dss", "--k", "1", "--sample", "10"], check=True,
                       stdout=subprocess.DEVNULL)
        for name in ("feature_positions", "feature_codebook"):
            with open(f"{t}/dss/{name}.npy", "rb") as f:
                put("npy", f"sparsified_{name}.npy", f.read())
        with open(f"{t}/dss/manifest.json") as f:
            m = json.load(f)
        m["meta"]["sparsified_from"] = "ds"  # not the temporary directory's name
        put("json", "sparsified_dataset_manifest.json", (json.dumps(m, indent=2) + "\n").encode())
