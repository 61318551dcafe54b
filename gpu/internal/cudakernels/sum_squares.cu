// sum_squares: partial[t] = Σ g[j]² over j = t, t+threads, t+2·threads, … < n, in double, for t < threads:
// the first pass of the global gradient norm SGD clips by. The host adds the partial sums (it needs the norm
// to decide the clipping and to report it). One thread per partial sum, no shared memory or barriers.
extern "C" __global__ void sum_squares(const float* g, double* partial, int n, int threads) {
	int t = blockIdx.x * blockDim.x + threadIdx.x;
	if (t < threads) {
		double acc = 0.0;
		for (long long j = t; j < n; j += threads) {
			double v = g[j];
			acc += v * v;
		}
		partial[t] = acc;
	}
}
