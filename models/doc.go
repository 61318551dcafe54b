// Package models holds bicyc's trainable networks as gorgonia graph builders: the feature extractor Backbone
// (arch.ConvNet for 28x28 grayscale inputs, arch.ResNet18 for 32x32 RGB), the per-task Linear head, and the
// Mapper used for the distiller D and the adapter A (docs/method.md, "Networks").
//
// # Layout and dtype
//
// Images are NCHW float32 [N,C,H,W]; features are [N,S]. All model tensors are float32 and use PyTorch's layouts
// (conv weights [out,in,k,k], linear weights [out,in]) and PyTorch / torchvision state names, which are the
// contract with the ONNX exporter.
//
// # Ownership and graphs
//
// A model owns its tensors (and a Backbone its batch-normalisation running statistics). Build binds those same
// tensors into a graph, so one model can be built into several graphs with fixed, different shapes: a training
// graph at batch B and an evaluation graph at another batch size. gorgonia's solvers update parameter values in
// place, so a step through one graph is seen by every other graph of the model; SetState also copies in place.
// Clone makes an independent deep copy, such as the frozen previous backbone. Node names carry a per-instance
// number, so a model and its clone can share one graph without gorgonia merging their nodes.
//
// Models are not safe for concurrent use: never run two graphs of one model, or a graph and SetState, at once.
//
// # Files
//
// State returns a model's tensors under their PyTorch state-dict names (package safetensors writes them) and
// SetState copies such tensors back in; WithPrefix renames them to store several models in one file. Training
// checkpoints (package train) and model bundles (package export) are built from them. A state that does not fit
// the model gives an error wrapping ErrBadState that names the tensor.
//
// May import: models/ops, models/optim, safetensors, kernels; never data, train, export.
package models
