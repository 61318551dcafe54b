// Package pretrained imports pretrained backbone weights from ONNX files into bicyc's gorgonia backbones, to
// fine-tune instead of training from scratch.
//
// ResNet18 reads a torchvision ResNet-18 exported to ONNX (read with github.com/owulveryck/onnx-go) and copies
// every convolution weight, BatchNorm weight and bias and BatchNorm running statistic into a models.Backbone
// of architecture resnet18-imagenet by its state-dict name; the classifier fc is ignored and the backbone's
// own 1x1 reduction keeps its initial values. The file must keep its BatchNorm layers, which torch.onnx.export
// folds into the convolutions unless told otherwise:
//
//	model = torchvision.models.resnet18(weights="IMAGENET1K_V1").eval()
//	torch.onnx.export(model, torch.zeros(1, 3, 224, 224), "resnet18.onnx", opset_version=17,
//	                  training=torch.onnx.TrainingMode.PRESERVE, do_constant_folding=False)
//
// Errors wrap one sentinel per problem (ErrNotONNX, ErrFoldedBatchNorm, ErrExternalData, ErrFloat16,
// ErrArchitecture, ErrTensor), name the file and say how to fix it. The package is for training only: the
// inference side (infer, bundle, cmd/bicyc-infer) never imports it, so it links neither gorgonia nor onnx-go.
//
// May import: models, safetensors.
package pretrained
