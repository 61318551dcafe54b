// Package rundir is the schema of a training run's directory as tools
// outside training read it: the records a run writes beside its
// checkpoints (config.yaml, stream.json, metrics.json: ReadConfig,
// ReadStream, ReadSummary and the types Summary, MetricSet, TaskReport,
// Drift, Stream), how far a run got (ReadProgress), and the checkpoints'
// names (CheckpointName, LatestFile). The train package writes the
// records through these types; report, sweep and bicyc-infer read them
// without linking the training engine (gorgonia).
//
// With the checkpoint layout, bicyc and bicyc-infer tell whether a model
// directory is older than its run's last checkpoint, which is what a train
// or learn killed between its checkpoint and its export leaves (Check,
// CheckModel). It also keeps a run to one writer at a time (Lock,
// LockFile) and clears what a killed writer left (RemoveTemp).
//
// May import: config, metrics, bundle (file names), bounded, durable, lockfile; never gorgonia, data, models, train, export (TestForbiddenImports).
package rundir
