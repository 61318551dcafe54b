// squared_difference_sum: partial[t] = Σ (a[j] − b[j])² over j = t, t+threads, t+2·threads, … < n, in
// double, for t < threads: the first pass of the mean squared error (ops.MeanSquaredError); the host adds
// the partial sums and divides by n. One thread per partial sum, no shared memory or barriers.
extern "C" __global__ void squared_difference_sum(const float* a, const float* b, double* partial, int n, int threads) {
	int t = blockIdx.x * blockDim.x + threadIdx.x;
	if (t < threads) {
		double acc = 0.0;
		for (long long j = t; j < n; j += threads) {
			double d = (double)a[j] - (double)b[j];
			acc += d * d;
		}
		partial[t] = acc;
	}
}
