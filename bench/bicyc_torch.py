"""The bicyc networks in PyTorch, for the side-by-side benchmarks only.

Never a runtime dependency of bicyc: run with Debian's /usr/bin/python3 and
python3-torch 1.13 (bench/install-torch.sh installs it).

State-dict names are those of package models (models/backbone.go,
models/linear.go, models/mapper.go), so a bicyc checkpoint
(checkpoints/task-NN/backbone.safetensors) loads with load_state_dict and the
PyTorch network is the same network. Tensors are float32, images NCHW.
"""

import copy
import json
import os
import struct

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn
from torch.nn.utils.fusion import fuse_conv_bn_eval

# Batch-norm epsilon of every backbone BN layer: models/backbone.go bnEps,
# PyTorch's default.
BN_EPS = 1e-5
# Floor of the feature norm before normalising it: gauss.NormEpsilon
# (gauss/classifier.go, "zh = z / max(||z||, 1e-12)").
NORM_EPS = 1e-12


def read_safetensors(path):
    """Returns ({name: float32 ndarray}, metadata) of a safetensors file.

    The format: an 8-byte little-endian header length, a JSON header that
    maps each tensor to dtype, shape and [begin, end) byte offsets into the
    data section that follows, and the raw little-endian data. bicyc writes
    only F32 tensors (package safetensors).
    """
    with open(path, "rb") as f:
        blob = f.read()
    if len(blob) < 8:
        raise ValueError(f"{path}: {len(blob)} bytes, too short for a safetensors header")
    (n,) = struct.unpack("<Q", blob[:8])
    if 8 + n > len(blob):
        raise ValueError(f"{path}: header of {n} bytes runs past the end of the file")
    header = json.loads(blob[8 : 8 + n])
    meta = header.pop("__metadata__", {}) or {}
    data = memoryview(blob)[8 + n :]
    tensors = {}
    for name, t in header.items():
        if t["dtype"] != "F32":
            raise ValueError(f"{path}: tensor {name!r} is {t['dtype']}, want F32")
        begin, end = t["data_offsets"]
        arr = np.frombuffer(data[begin:end], dtype="<f4")
        tensors[name] = arr.reshape(t["shape"]).copy()
    return tensors, meta


def conv_bn(cin, cout, k, stride, pad):
    """A conv without bias and its BN, as package models' convUnit."""
    return nn.Conv2d(cin, cout, k, stride, pad, bias=False), nn.BatchNorm2d(cout, eps=BN_EPS)


class ConvNet(nn.Module):
    """models.ArchConvNet: image [N,C,28,28] -> features [N,S].

    conv3x3 C->32 pad 1, BN, ReLU, maxpool 2; conv3x3 32->64 pad 1, BN, ReLU,
    maxpool 2; conv3x3 64->128 pad 1, BN, ReLU; conv1x1 128->S with bias;
    global average pool.
    """

    def __init__(self, in_channels=1, feature_dim=64):
        super().__init__()
        self.conv1, self.bn1 = conv_bn(in_channels, 32, 3, 1, 1)
        self.conv2, self.bn2 = conv_bn(32, 64, 3, 1, 1)
        self.conv3, self.bn3 = conv_bn(64, 128, 3, 1, 1)
        self.reduce = nn.Conv2d(128, feature_dim, 1, bias=True)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.bn1(self.conv1(x))), 2)
        x = F.max_pool2d(F.relu(self.bn2(self.conv2(x))), 2)
        x = F.relu(self.bn3(self.conv3(x)))
        return self.reduce(x).mean(dim=(2, 3))


class BasicBlock(nn.Module):
    """relu(bn2(conv2(relu(bn1(conv1(x))))) + shortcut(x)); the shortcut is a
    1x1 conv + BN (downsample.0, downsample.1) when the shape changes."""

    def __init__(self, cin, cout, stride):
        super().__init__()
        self.conv1, self.bn1 = conv_bn(cin, cout, 3, stride, 1)
        self.conv2, self.bn2 = conv_bn(cout, cout, 3, 1, 1)
        self.downsample = None
        if stride != 1 or cin != cout:
            self.downsample = nn.Sequential(*conv_bn(cin, cout, 1, stride, 0))

    def forward(self, x):
        y = F.relu(self.bn1(self.conv1(x)))
        y = self.bn2(self.conv2(y))
        s = x if self.downsample is None else self.downsample(x)
        return F.relu(y + s)


class ResNet18(nn.Module):
    """models.ArchResNet18, the CIFAR ResNet-18 of docs/method.md: 3x3 stride-1
    stem without max-pool, stages of two BasicBlocks at 64, 128, 256, 512
    channels, then a 1x1 conv 512->S with bias and global average pooling."""

    def __init__(self, in_channels=3, feature_dim=64):
        super().__init__()
        self.conv1, self.bn1 = conv_bn(in_channels, 64, 3, 1, 1)
        cin = 64
        for i, cout in enumerate([64, 128, 256, 512]):
            stride = 1 if i == 0 else 2
            setattr(self, f"layer{i + 1}", nn.Sequential(BasicBlock(cin, cout, stride), BasicBlock(cout, cout, 1)))
            cin = cout
        self.reduce = nn.Conv2d(512, feature_dim, 1, bias=True)

    def forward(self, x):
        x = F.relu(self.bn1(self.conv1(x)))
        x = self.layer4(self.layer3(self.layer2(self.layer1(x))))
        return self.reduce(x).mean(dim=(2, 3))

    def stages(self):
        """The stages models.Backbone.FreezeStages counts: the stem, layer1..layer4."""
        return [nn.ModuleList([self.conv1, self.bn1]), self.layer1, self.layer2, self.layer3, self.layer4]


class ResNet18ImageNet(ResNet18):
    """models.ArchResNet18ImageNet, torchvision's ImageNet ResNet-18 with the
    reduction: a 7x7 stride-2 stem conv 64 (pad 3) + BN + ReLU and a 3x3
    stride-2 max-pool (pad 1), then ResNet18's stages, 1x1 conv 512->S with
    bias and global average pooling. Same state-dict names as ResNet18."""

    def __init__(self, in_channels=3, feature_dim=64):
        super().__init__(in_channels, feature_dim)
        self.conv1, self.bn1 = conv_bn(in_channels, 64, 7, 2, 3)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.bn1(self.conv1(x))), 3, 2, 1)
        x = self.layer4(self.layer3(self.layer2(self.layer1(x))))
        return self.reduce(x).mean(dim=(2, 3))


def freeze_stages(net, n):
    """models.Backbone.FreezeStages(n) on a ResNet: the first n stages get
    requires_grad False and evaluation-mode BatchNorm (call after .train())."""
    for stage in net.stages()[:n]:
        stage.requires_grad_(False)
        stage.eval()
    return net


BACKBONES = {"convnet": ConvNet, "resnet18": ResNet18, "resnet18-imagenet": ResNet18ImageNet}


class Mapper(nn.Module):
    """models.MapperMLP, the distiller D and adapter A: Linear(S, h*S), exact
    (erf) GELU, Linear(h*S, S) (docs/method.md, "Networks")."""

    def __init__(self, s=64, hidden_mult=32):
        super().__init__()
        self.fc1 = nn.Linear(s, hidden_mult * s)
        self.fc2 = nn.Linear(hidden_mult * s, s)

    def forward(self, z):
        return self.fc2(F.gelu(self.fc1(z), approximate="none"))


def load_backbone(path):
    """Returns the eval-mode backbone of a bicyc backbone.safetensors file
    (its metadata names arch, in_channels and feature_dim)."""
    tensors, meta = read_safetensors(path)
    arch = meta.get("arch")
    if arch not in BACKBONES:
        raise ValueError(f"{path}: backbone architecture {arch!r}, want one of {sorted(BACKBONES)}")
    net = BACKBONES[arch](int(meta["in_channels"]), int(meta["feature_dim"]))
    state = {k: torch.from_numpy(v) for k, v in tensors.items()}
    missing, unexpected = net.load_state_dict(state, strict=False)
    missing = [k for k in missing if not k.endswith("num_batches_tracked")]
    if missing or unexpected:
        raise ValueError(f"{path}: state does not match {arch}: missing {missing}, unexpected {unexpected}")
    return net.eval()


class PrototypeClassifier(nn.Module):
    """The factored classifier tables of a model directory written before
    schema version 5, read from its prototypes.safetensors
    (classifier.means [K,S], classifier.whiten [K,S,S], classifier.bias [K]);
    smaller score is closer:

        zh      = z / max(||z||, 1e-12)        if normalize
        score_c = ||W_c (zh - m_c)||^2 + b_c

    evaluated as the factored classifier.onnx does, with one matrix product:
    y = zh Wall^T - vec(W_c m_c), Wall = W stacked to [K*S, S].
    """

    def __init__(self, path):
        super().__init__()
        t, meta = read_safetensors(path)
        for name in ("classifier.means", "classifier.whiten", "classifier.bias"):
            if name not in t:
                raise ValueError(f"{path}: tensor {name!r} missing (a directory of schema version 5 on keeps the table in classifier.data)")
        means, whiten, bias = t["classifier.means"], t["classifier.whiten"], t["classifier.bias"]
        k, s = means.shape
        self.k, self.s = k, s
        self.normalize = meta.get("classifier.normalize") == "true"
        offset = np.einsum("kij,kj->ki", whiten.astype(np.float64), means.astype(np.float64))
        self.register_buffer("wall", torch.from_numpy(whiten.reshape(k * s, s)))
        self.register_buffer("offset", torch.from_numpy(offset.reshape(k * s).astype(np.float32)))
        self.register_buffer("bias", torch.from_numpy(bias))

    def forward(self, z):
        if self.normalize:
            z = z / z.norm(dim=1, keepdim=True).clamp_min(NORM_EPS)
        y = torch.addmm(-self.offset, z, self.wall.t()).view(-1, self.k, self.s)
        return (y * y).sum(dim=2) + self.bias


def _varint(buf, pos):
    """Returns the protobuf varint at buf[pos:] and the position after it."""
    value = shift = 0
    while True:
        if pos >= len(buf):
            raise ValueError("protobuf varint runs past the end")
        b = buf[pos]
        pos += 1
        value |= (b & 0x7F) << shift
        if b < 0x80:
            return value, pos
        shift += 7


def _fields(buf):
    """Yields (field number, wire type, value) of a protobuf message: an int
    for varints, a memoryview for length-delimited fields, raw bytes for the
    fixed-width ones."""
    pos = 0
    while pos < len(buf):
        key, pos = _varint(buf, pos)
        num, wire = key >> 3, key & 7
        if wire == 0:
            value, pos = _varint(buf, pos)
        elif wire == 2:
            n, pos = _varint(buf, pos)
            if pos + n > len(buf):
                raise ValueError(f"protobuf field {num} of {n} bytes runs past the end")
            value, pos = buf[pos : pos + n], pos + n
        elif wire in (1, 5):
            n = 8 if wire == 1 else 4
            value, pos = bytes(buf[pos : pos + n]), pos + n
        else:
            raise ValueError(f"protobuf wire type {wire} of field {num} is not supported")
        yield num, wire, value


# Field numbers of onnx.proto (ModelProto.graph, GraphProto.initializer,
# TensorProto's fields) and TensorProto.DataType FLOAT.
_MODEL_GRAPH, _GRAPH_INITIALIZER = 7, 5
_T_DIMS, _T_TYPE, _T_FLOATS, _T_NAME, _T_RAW, _T_EXTERNAL = 1, 2, 4, 8, 9, 13
_ONNX_FLOAT = 1


def read_onnx_floats(path):
    """Returns {name: float32 ndarray} of the float initializers of an ONNX
    file, reading external data (a location, offset and length beside the
    model) as ONNX Runtime does. Only what bicyc's graphs use: raw_data,
    float_data and external data; other element types are skipped."""
    with open(path, "rb") as f:
        model = memoryview(f.read())
    out = {}
    for num, wire, graph in _fields(model):
        if num != _MODEL_GRAPH or wire != 2:
            continue
        for gnum, gwire, tensor in _fields(graph):
            if gnum != _GRAPH_INITIALIZER or gwire != 2:
                continue
            name, dims, dtype, raw, floats, external = "", [], 0, None, [], {}
            for tnum, twire, v in _fields(tensor):
                if tnum == _T_DIMS:
                    if twire == 2:  # packed
                        pos = 0
                        while pos < len(v):
                            d, pos = _varint(v, pos)
                            dims.append(d)
                    else:
                        dims.append(v)
                elif tnum == _T_TYPE:
                    dtype = v
                elif tnum == _T_NAME:
                    name = bytes(v).decode()
                elif tnum == _T_RAW:
                    raw = bytes(v)
                elif tnum == _T_FLOATS:
                    floats.append(np.frombuffer(v if twire == 2 else bytes(v), dtype="<f4"))
                elif tnum == _T_EXTERNAL:
                    entry = {k: bytes(x).decode() for k, _, x in _fields(v)}
                    external[entry.get(1, "")] = entry.get(2, "")
            if dtype != _ONNX_FLOAT:
                continue
            if external:
                loc = os.path.join(os.path.dirname(path), external["location"])
                offset, n = int(external.get("offset", 0)), int(external["length"])
                with open(loc, "rb") as f:
                    f.seek(offset)
                    raw = f.read(n)
                if len(raw) != n:
                    raise ValueError(f"{loc}: {len(raw)} bytes at offset {offset}, {path} names {n} for {name!r}")
            arr = np.frombuffer(raw, dtype="<f4") if raw is not None else np.concatenate(floats or [np.zeros(0, "<f4")])
            if arr.size != int(np.prod(dims)):
                raise ValueError(f"{path}: initializer {name!r} has {arr.size} values, shape {dims}")
            out[name] = arr.reshape(dims).copy()
    return out


class GraphClassifier(nn.Module):
    """classifier.onnx of a model directory of schema version 5 on, whose
    class table is stored once in classifier.data (ONNX external data),
    evaluated as the graph does (export/classgraph): below 64 classes the
    factored form,

        y       = zh Wall^T + classifier.neg_whitened_means    Wall [K*S, S] in classifier.data
        score_c = sum_i y[c, i]^2 + classifier.bias_c

    and from 64 classes the expanded form of gauss.QuadraticTables,

        u      = zh - classifier.center
        phi    = [u_i u_j for i <= j (row-major) ; u]           [N, D], D = S(S+1)/2 + S
        scores = phi Coef^T + classifier.const                  Coef [K, D] in classifier.data

    with zh = z / max(||z||, 1e-12) when the graph normalises (it then holds
    classifier.norm_eps). The tables are the graph's own initializers, so no
    rule of the classifier is repeated here.
    """

    def __init__(self, path):
        super().__init__()
        t = read_onnx_floats(path)
        self.normalize = "classifier.norm_eps" in t
        if "classifier.coef" in t:
            coef = t["classifier.coef"]
            self.k, d = coef.shape
            self.s = len(t["classifier.center"])
            i, j = np.triu_indices(self.s)
            if d != len(i) + self.s:
                raise ValueError(f"{path}: classifier.coef is [{self.k}, {d}], want D = {len(i) + self.s} for S = {self.s}")
            self.expanded = True
            self.register_buffer("center", torch.from_numpy(t["classifier.center"]))
            self.register_buffer("coef", torch.from_numpy(coef))
            self.register_buffer("const", torch.from_numpy(t["classifier.const"]))
            self.register_buffer("pairs", torch.from_numpy(i * self.s + j))
        elif "classifier.whiten" in t:
            wall = t["classifier.whiten"]
            self.k = len(t["classifier.bias"])
            self.s = wall.shape[1]
            self.expanded = False
            self.register_buffer("wall", torch.from_numpy(wall))
            self.register_buffer("offset", torch.from_numpy(t["classifier.neg_whitened_means"]))
            self.register_buffer("bias", torch.from_numpy(t["classifier.bias"]))
        else:
            raise ValueError(f"{path}: neither classifier.coef nor classifier.whiten among the initializers {sorted(t)}")

    def forward(self, z):
        if self.normalize:
            z = z / z.norm(dim=1, keepdim=True).clamp_min(NORM_EPS)
        if self.expanded:
            u = z - self.center
            outer = (u.unsqueeze(2) * u.unsqueeze(1)).reshape(-1, self.s * self.s)
            phi = torch.cat([outer[:, self.pairs], u], dim=1)
            return torch.addmm(self.const, phi, self.coef.t())
        y = torch.addmm(self.offset, z, self.wall.t()).view(-1, self.k, self.s)
        return (y * y).sum(dim=2) + self.bias


# bundle.ClassifierDataFile: present (and listed in manifest.json's files)
# from schema version 5 on.
CLASSIFIER_DATA = "classifier.data"


def load_classifier(model_dir, manifest):
    """Returns the eval-mode classifier of a model directory of any schema
    version: the graph's tables (GraphClassifier) where the directory has
    classifier.data, else the factored tables of prototypes.safetensors."""
    if CLASSIFIER_DATA in manifest.get("files", {}):
        return GraphClassifier(os.path.join(model_dir, "classifier.onnx")).eval()
    return PrototypeClassifier(os.path.join(model_dir, "prototypes.safetensors")).eval()


def fold_bn(net):
    """Returns a copy of an eval-mode backbone with every BN folded into the
    conv before it (torch.nn.utils.fusion.fuse_conv_bn_eval), the form
    backbone.onnx has."""
    net = copy.deepcopy(net)
    for parent in net.modules():
        for name, child in list(parent.named_children()):
            if isinstance(child, nn.Conv2d) and name.startswith("conv"):
                bn_name = "bn" + name[len("conv") :]
                bn = getattr(parent, bn_name, None)
                if isinstance(bn, nn.BatchNorm2d):
                    setattr(parent, name, fuse_conv_bn_eval(child, bn))
                    setattr(parent, bn_name, nn.Identity())
            if isinstance(child, nn.Sequential) and len(child) == 2 and isinstance(child[1], nn.BatchNorm2d):
                child[0] = fuse_conv_bn_eval(child[0], child[1])
                child[1] = nn.Identity()
    return net


def image_to_array(img, channels):
    """Returns a decoded PIL image as uint8 CHW, converted to the model's
    channels (the images here already have the model's size)."""
    img = img.convert("L" if channels == 1 else "RGB")
    a = np.asarray(img, dtype=np.uint8)
    return a[None] if channels == 1 else a.transpose(2, 0, 1)


class Preprocess:
    """The manifest's test-time normalisation, data.Preprocess.Normalize:

        x = (pixel/255 - mean[c]) / std[c]
    """

    def __init__(self, manifest):
        p = manifest["preprocess"]
        self.channels, self.height, self.width = p["channels"], p["height"], p["width"]
        self.mean = torch.tensor(p["mean"], dtype=torch.float32).view(-1, 1, 1)
        self.std = torch.tensor(p["std"], dtype=torch.float32).view(-1, 1, 1)

    def __call__(self, imgs):
        """Returns the float32 NCHW batch of a list of decoded PIL images."""
        for img in imgs:
            if img.size != (self.width, self.height):
                raise ValueError(f"image is {img.size[0]}x{img.size[1]}, the model takes {self.width}x{self.height}")
        a = np.stack([image_to_array(img, self.channels) for img in imgs])
        x = torch.from_numpy(a).float().div_(255)
        return (x - self.mean) / self.std
