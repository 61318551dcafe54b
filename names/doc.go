// Package names holds the one rule for the names bicyc turns into folder
// names and table rows: class names (from class folders, datasets,
// add-classes and model manifests) and run names (the folder a run is
// written to). Every command checks names through it, so they cannot
// disagree.
package names
