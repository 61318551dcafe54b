// Package repository is the layout of a model repository, the directory
// bicyc-infer serve serves many models from and add-classes writes new
// versions into:
//
//	DIR/<name>/<version>/
//
// each version a model directory (a bundle, verified when it is opened)
// named by a positive decimal number without leading zeros (ParseVersion),
// each name following names.Model. Other entries (hidden directories, such
// as the ".<n>.new-*" a bundle write leaves while it works, and files) are
// not models or versions. Models and Versions list them, LatestVersion and
// NextVersion pick a version, CreateNextVersion writes the next one without
// ever replacing another, and LockFile is the writers' lock.
//
// Imports: the standard library and names; never serve, infer or a
// training package.
package repository
