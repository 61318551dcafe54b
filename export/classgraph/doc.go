// Package classgraph writes the ONNX graph of bicyc's Gaussian classifier
// (docs/method.md, "Classifier"): from the tables of a gauss.Classifier,
// classifier.onnx (features -> scores), model.onnx (an exported
// backbone.onnx followed by the classifier) and their shared class table,
// classifier.data, read as ONNX external data. It is the one builder of
// that graph: package export writes a trained model's with it, package
// author a model with classes added after training. The runtime (package
// infer) only reads what it writes.
//
// Shortlist builds the approximate classifier graph (int8 scores of every
// class, the best n rescored exactly) that Files writes as a model
// directory's shortlist.onnx when the classifier options ask for one
// (gauss.ClassifierOptions.Shortlist; docs/classes.md, "Shortlist").
//
// Errors about the tables wrap ErrTables; about a backbone.onnx that
// cannot be extended, ErrONNX.
//
// May import: export/onnxgraph, export/onnxpb, bundle, gauss.
package classgraph
