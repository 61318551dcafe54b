"""Golden geometry of torchvision's photo transforms, for data's tests.

Run with Debian's python3-torch and python3-torchvision (1.13 / 0.14):
    /usr/bin/python3 gen.py > geometry.txt

Each line is one case, fields separated by spaces:
    resize W H S W2 H2           Resize(S) of a W x H image gives W2 x H2
    center W H CW CH LEFT TOP    CenterCrop((CH, CW)) of a W x H image
    fallback W H R0 R1 LEFT TOP CW CH
                                 RandomResizedCrop.get_params when all 10
                                 attempts miss (scale above 1), ratio R0..R1
"""
import torch
from PIL import Image
import torchvision.transforms as T
import torchvision.transforms.functional as F

sizes = [(640, 480), (480, 640), (500, 375), (375, 500), (40, 30), (56, 72), (28, 28),
         (333, 500), (1000, 7), (7, 1000), (257, 256), (300, 299), (64, 64), (65, 91)]
for w, h in sizes:
    for s in [224, 256, 32, 73, 64]:
        out = F.resize(Image.new("RGB", (w, h)), s)
        print("resize", w, h, s, out.size[0], out.size[1])
for w, h in [(298, 224), (256, 341), (341, 256), (257, 256), (256, 257), (259, 260), (73, 97), (28, 28), (29, 31)]:
    for cw, ch in [(224, 224), (28, 28), (24, 20), (64, 64), (27, 27)]:
        if cw > w or ch > h:
            continue
        # a tensor whose value encodes (y, x) reveals the crop's top-left
        idx = torch.arange(w * h).reshape(1, h, w)
        c = F.center_crop(idx, [ch, cw])
        v = int(c[0, 0, 0])
        print("center", w, h, cw, ch, v % w, v // w)
for w, h in [(640, 480), (480, 640), (100, 10), (10, 100), (50, 50), (3, 7), (91, 65)]:
    for r0, r1 in [(3 / 4, 4 / 3), (1.0, 1.0), (0.5, 2.0)]:
        top, left, ch, cw = T.RandomResizedCrop.get_params(Image.new("RGB", (w, h)), [2.0, 3.0], [r0, r1])
        print("fallback", w, h, repr(r0), repr(r1), left, top, cw, ch)
