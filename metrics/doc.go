// Package metrics computes the continual-learning measures of the paper's
// appendix A.3 ("Accuracy Metrics" and "AD-% in
// [0.9, 1.1]") and docs/method.md, "Metrics":
//
//   - the accuracy matrix acc[t][u], accuracy on task u's test set after
//     training task t, with the number of classes of each task (Matrix), in
//     JSON and CSV;
//   - A_last, A_inc and F_last, and each of them after every step for curves;
//   - AD-%, the share of singular values of the composed least-squares maps
//     A_hat D_hat between old and new features that lie in [0.9, 1.1];
//   - the mean and population standard deviation used to aggregate per-class
//     drift statistics over a class set (the statistics themselves are
//     gauss.Drift).
//
// Accuracies are fractions in [0, 1]; multiply by 100 for the paper's tables.
// Tasks and steps are numbered from 0 (the paper numbers them from 1).
// Functions never modify their arguments; a Matrix is not safe for concurrent
// mutation, but concurrent reads are fine.
//
// May import: nothing of bicyc (the ground floor).
package metrics
