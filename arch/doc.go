// Package arch names the architectures of a bicyc model, once for every
// package that reads or writes them: the backbone network (Backbone), the
// distiller and adapter network (Mapper), and how an image of another
// size is fit to the network's input (ResizeMode). Each is a string type
// whose constants are the names a configuration, a checkpoint and a model
// manifest spell, with its one validation (Check). config validates the
// settings with it, models builds the networks, export writes them to ONNX
// and the image code resizes by it.
//
// It imports only the standard library, so the inference side and the
// report may use it without linking the trainer.
package arch
