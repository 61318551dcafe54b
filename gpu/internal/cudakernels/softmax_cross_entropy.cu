// softmax_cross_entropy: for each row b of logits [rows,k] and targets t [rows,k], the row's loss
// loss[b] = −Σ_j t[b,j]·log softmax(logits[b])_j and the gradient of scale·Σ_b loss[b] with respect to the
// logits, dlogits[b,j] = scale·(softmax_j·Σ_j t[b,j] − t[b,j]). The softmax is taken after subtracting the
// row's maximum, in double. One thread per row (rows are a batch, k the classes: no shared memory needed);
// the mean over rows is the host's sum of loss times scale = 1/rows.
extern "C" __global__ void softmax_cross_entropy(const float* logits, const float* t, float* loss, float* dlogits, int rows, int k, float scale) {
	int b = blockIdx.x * blockDim.x + threadIdx.x;
	if (b < rows && k > 0) {
		const float* z = logits + (long long)b * k;
		const float* tb = t + (long long)b * k;
		float* dz = dlogits + (long long)b * k;
		double m = z[0];
		for (int j = 1; j < k; j++) m = z[j] > m ? z[j] : m;
		double e = 0.0, tsum = 0.0, tz = 0.0;
		for (int j = 0; j < k; j++) {
			e += exp(z[j] - m);
			tsum += tb[j];
			tz += tb[j] * (z[j] - m);
		}
		double lse = log(e);
		loss[b] = (float)(tsum * lse - tz);
		for (int j = 0; j < k; j++) dz[j] = (float)(scale * (exp(z[j] - m - lse) * tsum - tb[j]));
	}
}
