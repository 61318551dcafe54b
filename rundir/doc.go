// Package rundir knows the part of a training run's directory that tools
// outside training read: which checkpoint is the newest. With it, bicyc
// and bicyc-infer tell whether a model directory is older than its run's
// last checkpoint, which is what a train or learn killed between its
// checkpoint and its export leaves (Check, CheckModel). The train package
// writes the layout through CheckpointName and LatestFile; this package
// reads it without linking the training engine. It also keeps a run to one
// writer at a time (Lock, LockFile) and clears what a killed writer left
// (RemoveTemp).
//
// May import: bundle, config and the ground floor; never gorgonia, data, models, train (TestForbiddenImports).
package rundir
