"""Writes `digits-images-idx3-ubyte` and `digits-labels-idx1-ubyte` (the data behind
`autograd::data::datasets::Digits`) from scikit-learn's `digits.csv.gz`, checking its SHA-256
first: `python autograd-runtime/data/make_digits.py PATH/TO/digits.csv.gz` (see README.md).

IDX is MNIST's format: a big-endian header (two zero bytes, the element type 0x08 = unsigned
byte, the number of dimensions, then each dimension as a 32-bit integer) and the values in
row-major order. No third-party package is needed."""
import gzip
import hashlib
import os
import struct
import sys

SHA256 = "09f66e6debdee2cd2b5ae59e0d6abbb73fc2b0e0185d2e1957e9ebb51e23aa22"
HERE = os.path.dirname(os.path.abspath(__file__))


def idx(dims, values):
    header = struct.pack(">BBBB", 0, 0, 0x08, len(dims)) + b"".join(
        struct.pack(">I", d) for d in dims
    )
    return header + bytes(values)


def main(path):
    raw = open(path, "rb").read()
    digest = hashlib.sha256(raw).hexdigest()
    if digest != SHA256:
        sys.exit(f"{path}: SHA-256 {digest}, expected {SHA256}")
    pixels, labels = [], []
    for line in gzip.decompress(raw).decode().splitlines():
        if not line.strip():
            continue
        fields = [int(float(f)) for f in line.split(",")]
        assert len(fields) == 65 and all(0 <= p <= 16 for p in fields[:64]) and 0 <= fields[64] <= 9
        pixels.extend(fields[:64])
        labels.append(fields[64])
    n = len(labels)
    with open(os.path.join(HERE, "digits-images-idx3-ubyte"), "wb") as f:
        f.write(idx([n, 8, 8], pixels))
    with open(os.path.join(HERE, "digits-labels-idx1-ubyte"), "wb") as f:
        f.write(idx([n], labels))
    print(f"{n} images; per class {[labels.count(c) for c in range(10)]}")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    main(sys.argv[1])
