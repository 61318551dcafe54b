// Package names holds the one rule for the names bicyc turns into folder
// names and table rows: class names (from class folders, datasets,
// add-classes and model manifests) and run names (the folder a run is
// written to). Every command checks names through it, so they cannot
// disagree: new class names are normalised to Unicode NFC (NFC), checked
// (Class) and compared up to letter case and form (Key, CheckNew); names
// already in a model or run are read by the older rule (Stored) and
// reported (Warnings), so old models keep working.
//
// May import: nothing of bicyc (the ground floor).
package names
