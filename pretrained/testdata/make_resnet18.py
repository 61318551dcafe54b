"""Writes torchvision-style ResNet-18 ONNX files for the tests of package pretrained.

Run with Debian's python3-torch and python3-torchvision (/usr/bin/python3):

    python3 make_resnet18.py                  # the small committed fixtures (width 4), in this directory
    python3 make_resnet18.py --full OUT.onnx  # torchvision's own resnet18 (width 64, about 47 MB)

Weights are random (torchvision downloads nothing offline) and every BatchNorm gets random running statistics,
weight and bias, so that an import that skipped or swapped any of them would change the features.

The small network keeps torchvision's module and tensor names (conv1, bn1, layer1.0.conv1, ...,
layer2.0.downsample.0, fc) and its forward pass, built from torchvision's own BasicBlock, with stage widths
4, 8, 16, 32 instead of 64, 128, 256, 512.

Files, all exported as a user must to keep BatchNorm tensors under their state-dict names
(training=PRESERVE, do_constant_folding=False), except the folded one:
  resnet18_w4.onnx         the fixture that imports
  resnet18_w2_folded.onnx  default eval export (width 2): BatchNorm folded into the convolutions (onnx::Conv_* tensors)
  resnet34_w2.onnx         a ResNet-34 of width 2: another architecture with the same name scheme
"""
import argparse
import os

import torch
from torch import nn
from torchvision.models import resnet18
from torchvision.models.resnet import BasicBlock


class NarrowResNet(nn.Module):
    """torchvision's ResNet with BasicBlocks, stage widths w, 2w, 4w, 8w and layers blocks per stage."""

    def __init__(self, w, layers=(2, 2, 2, 2), num_classes=10):
        super().__init__()
        self.conv1 = nn.Conv2d(3, w, kernel_size=7, stride=2, padding=3, bias=False)
        self.bn1 = nn.BatchNorm2d(w)
        self.relu = nn.ReLU(inplace=True)
        self.maxpool = nn.MaxPool2d(kernel_size=3, stride=2, padding=1)
        inplanes = w
        for i, blocks in enumerate(layers):
            planes, stride = w << i, 1 if i == 0 else 2
            downsample = None
            if stride != 1 or inplanes != planes:
                downsample = nn.Sequential(nn.Conv2d(inplanes, planes, 1, stride=stride, bias=False), nn.BatchNorm2d(planes))
            mods = [BasicBlock(inplanes, planes, stride, downsample)]
            mods += [BasicBlock(planes, planes) for _ in range(blocks - 1)]
            setattr(self, "layer%d" % (i + 1), nn.Sequential(*mods))
            inplanes = planes
        self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
        self.fc = nn.Linear(inplanes, num_classes)

    def forward(self, x):
        x = self.maxpool(self.relu(self.bn1(self.conv1(x))))
        x = self.layer4(self.layer3(self.layer2(self.layer1(x))))
        return self.fc(torch.flatten(self.avgpool(x), 1))


def randomise(model, seed):
    """Random conv weights (torchvision's init) and random BatchNorm parameters and running statistics."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, nn.BatchNorm2d):
                c = m.num_features
                m.weight.copy_(0.5 + torch.rand(c, generator=g))
                m.bias.copy_(0.2 * torch.randn(c, generator=g))
                m.running_mean.copy_(0.2 * torch.randn(c, generator=g))
                m.running_var.copy_(0.5 + torch.rand(c, generator=g))
    model.eval()
    return model


def export(model, path, side, preserve=True):
    x = torch.zeros(1, 3, side, side)
    kw = dict(training=torch.onnx.TrainingMode.PRESERVE, do_constant_folding=False) if preserve else {}
    torch.onnx.export(model, x, path, opset_version=17, input_names=["input"], output_names=["logits"],
                      dynamic_axes={"input": {0: "N"}, "logits": {0: "N"}}, **kw)
    print("wrote", path, os.path.getsize(path), "bytes")


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--full", help="write torchvision's full-size resnet18 here instead of the small fixtures")
    args = p.parse_args()
    torch.manual_seed(14)
    if args.full:
        export(randomise(resnet18(), 1), args.full, 224)
        return
    here = os.path.dirname(os.path.abspath(__file__))
    small = randomise(NarrowResNet(4), 2)
    export(small, os.path.join(here, "resnet18_w4.onnx"), 64)
    export(randomise(NarrowResNet(2), 4), os.path.join(here, "resnet18_w2_folded.onnx"), 64, preserve=False)
    export(randomise(NarrowResNet(2, layers=(3, 4, 6, 3)), 3), os.path.join(here, "resnet34_w2.onnx"), 64)


if __name__ == "__main__":
    main()
