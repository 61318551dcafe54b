// Command openset measures the production loop of issue 17 on
// Fashion-MNIST: unknown detection by a calibrated model, and classes added
// without retraining (bicyc-infer add-classes) against `bicyc learn` on the
// same images.
//
// For every seed it draws a class permutation, keeps the last two classes
// out as the unknowns and trains the other eight as 4 tasks of 2 classes
// (the configuration given, kind imagefolder over PNG files it writes, with
// the validation split that calibrates the export). Then:
//
//   - unknown detection: the exported model classifies the test images of
//     the eight known classes and of the two unknown ones; AUROC and the
//     FPR at 95 % TPR (the share of unknown images accepted when 95 % of
//     known ones are) of the calibrated unknown score, against the nearest
//     distance as the baseline score, and the share of known test images the
//     calibrated threshold accepts (asked: export.accept_rate);
//   - unknown kinds (--kinds, on by default): every unknown score
//     (gauss.UnknownScores) on near unknowns (the held-out classes), shifted
//     ones (known images inverted or turned 90 or 180 degrees) and far ones
//     (the photos and graphics of Debian's libjxl-testdata and Go's
//     image/testdata, split by picture, plus noise and blank images). The
//     known test images and the shifted and far unknowns are split in a
//     validation and a test half; the report chooses the score with the best
//     validation AUROC and then shows every score on the test half (AUROC,
//     FPR at 95 % TPR, known images accepted and far images rejected at the
//     calibrated threshold). Every image's scores are kept in the seed's work
//     folder (unknown-scores.json);
//   - new classes: for each n in --add, the two unknown classes are added
//     from n training images each with author.AddClasses, and learnt from the
//     same images as a new task with train.Run.Learn on a copy of the run;
//     both models are exported and scored on the test images: accuracy over
//     all ten classes on the new classes' images and on the old ones'.
//
// --unknown 3 (or 4) holds out three (four) classes instead of two: the
// last two of the permutation stay the near test unknowns, the others are
// near validation unknowns, never trained and never in the test; the known
// classes are trained in tasks of 2 (3 in the first when their count is
// odd). --near then studies candidate unknown scores on those runs
// without training (issue 45, docs/results/openset-near.md): every image's
// features, pooled conv stages and four quarter turns are computed once per
// seed (near-features.gob in the seed's work folder); a rotation probe,
// kNN against samples of the stored class Gaussians, per-layer class
// Gaussians, residuals, norms and sums of standardised scores are fitted on
// one half of the run's validation split (the held-out training images the
// calibration reads), standardised and thresholded on the other half,
// chosen on the validation split (near validation class, shifted, far) and
// shown on the test split; near.json and near.md go into --out.
//
// With --reuse and --work, the runs a former call trained there are exported
// again with this build and measured, without training; --add "" skips
// adding classes.
//
// It writes results.json and README.md (the command, date, machine and
// budget, then a table per measurement with one row per seed and the mean
// ± std) into --out after every seed, so a run that stops keeps the seeds
// that finished; --render rewrites README.md from results.json alone.
// Training runs are long: a default-budget run takes tens of minutes per
// seed on two cores; --quick uses the quick profile, and quick1000.yaml and
// quick3000.yaml in this folder are reduced budgets of a few minutes per
// seed.
//
// Usage (from the repository root):
//
//	CGO_LDFLAGS=-lopenblas go run ./bench/openset --out docs/results/openset [--seeds 0,1,2] [--add 10,50,200] [--config bench/openset/quick1000.yaml] [--quick] [--learn=true] [--kinds=true] [--unknown 2] [--work DIR [--reuse]] [--render]
//	CGO_LDFLAGS=-lopenblas go run ./bench/openset --near --unknown 3 --work DIR --out docs/results/openset-near [--seeds 0,1,2] [--render]
//
// May import: anything it measures (a command; nothing imports it).
package main
