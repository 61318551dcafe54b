#!/usr/bin/python3
"""Writes golden.txt: CRC-32 checksums of torchvision's TrivialAugmentWide
operations applied to uint8 CHW tensors, for every operation, magnitude bin
and sign, on the test images that trivialaugment_golden_test.go rebuilds. The 15x30
image makes Rotate by 90 degrees sample exactly between pixels, where the
float32 rounding of the sampling grid decides.

Made with Debian bookworm's python3-torchvision 0.14.1 and python3-torch
1.13.1 (CPU, one thread):

    /usr/bin/python3 data/testdata/trivialaugment/gen.py \
        /usr/share/datasets/fashion-mnist > data/testdata/trivialaugment/golden.txt

Each line: image name, operation, sign (+ or -), then one checksum per bin
(a single one for the operations without magnitudes). A "magnitudes" line
per operation lists torch's float32 magnitude table.
"""
import gzip
import sys
import zlib

import torch
from torchvision.transforms import InterpolationMode
from torchvision.transforms.autoaugment import TrivialAugmentWide, _apply_op

torch.set_num_threads(1)


def fashion_mnist(root, n):
    with gzip.open(f"{root}/train-images-idx3-ubyte.gz") as f:
        raw = f.read()
    return [torch.tensor(list(raw[16 + i * 784 : 16 + (i + 1) * 784]), dtype=torch.uint8).view(28, 28) for i in range(n)]


def images(root):
    fm = fashion_mnist(root, 7)
    gray = fm[0].view(1, 28, 28)
    rgb32 = torch.empty(3, 32, 32, dtype=torch.uint8)
    for ch in range(3):
        for y in range(32):
            for x in range(32):
                inside = 2 <= y < 30 and 2 <= x < 30
                rgb32[ch, y, x] = fm[4 + ch][y - 2, x - 2] if inside else (x * 8 + y * 3 + ch * 50) % 256
    small = torch.empty(3, 9, 13, dtype=torch.uint8)
    for ch in range(3):
        for y in range(9):
            for x in range(13):
                small[ch, y, x] = (ch * 97 + y * 31 + x * 17 + (x * y) % 7 * 11) % 256
    odd = torch.empty(1, 15, 30, dtype=torch.uint8)
    for y in range(15):
        for x in range(30):
            odd[0, y, x] = (y * 37 + x * 11 + (x * y) % 5 * 23) % 256
    return [("fmnist-gray", gray), ("fmnist-rgb32", rgb32), ("synthetic-rgb", small), ("synthetic-gray-odd", odd)]


def main():
    space = TrivialAugmentWide()._augmentation_space(31)
    for op, (mags, signed) in space.items():
        if mags.ndim > 0:
            print("magnitudes", op, " ".join(repr(float(m)) for m in mags.tolist()))
    for name, img in images(sys.argv[1]):
        for op, (mags, signed) in space.items():
            for sign in ("+", "-") if signed else ("+",):
                sums = []
                for m in mags.tolist() if mags.ndim > 0 else [0.0]:
                    m = float(m)
                    if sign == "-":
                        m = -m
                    out = _apply_op(img, op, m, interpolation=InterpolationMode.NEAREST, fill=None)
                    sums.append("%08x" % zlib.crc32(out.contiguous().numpy().tobytes()))
                print(name, op, sign, " ".join(sums))


main()
