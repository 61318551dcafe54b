// Package gauss is bicyc's one home for Gaussian class prototypes: estimation
// of means and covariances, a Cholesky factorisation that does not give up on
// nearly singular matrices, sampling, Monte Carlo transport through an adapter,
// distances between Gaussians, the task-agnostic Mahalanobis classifier, and
// its calibration (a tempered class posterior and an open-set "unknown" score
// with a threshold for a requested acceptance rate).
// No other package computes prototype covariances or their factors.
//
// Numbers are float64 inside the package (covariances of 64-dim features lose
// too much in float32 once they are inverted) and float32 at the edges where
// they meet model tensors: feature matrices passed in and samples or scores
// passed out are float32, row-major, one row per example ([n, S]).
//
// A Gaussian owns its Mean slice and Cov matrix; functions here never modify
// their arguments and return fresh values. Gaussian values and a built
// Classifier are safe for concurrent reads.
//
// Constants come from docs/method.md ("Stage II", "Classifier") and the paper's
// appendix A.1.2 and A.3: the 1e-8 ridge
// added to every estimated covariance, the shrinkage of 3 used at test time, the
// correlation-matrix normalisation, and the drift diagnostics (mu-L2,
// Sigma-Frobenius, symmetric KL).
//
// Errors from outside data (NaN features, mismatched dimensions, too few
// samples) are returned, wrapping the sentinels ErrTooFewSamples, ErrNonFinite,
// ErrShape and ErrNotPositiveDefinite; misuse by the programmer (negative
// sizes, out-of-range class indices) panics with a "gauss: " message.
//
// May import: nothing of bicyc (the ground floor).
package gauss
