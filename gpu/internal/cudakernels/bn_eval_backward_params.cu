// bn_eval_backward_params: the parameter gradients of the evaluation-mode batch norm over x [N,C,S], with g
// = dy (0 where the fused ReLU's output y is not positive, if relu is not 0), μ the running mean and inv =
// 1/σ: dβ[c] = Σ g and dγ[c] = inv[c]·Σ g·(x − μ[c]), summed in double over N and S. One thread per channel
// (no shared memory or barriers), as ops.BatchNorm sums a channel per task.
extern "C" __global__ void bn_eval_backward_params(const float* x, const float* y, const float* dy, const float* mean, const double* inv,
                                                   float* dgamma, float* dbeta, int n, int c, int s, int relu) {
	int ch = blockIdx.x * blockDim.x + threadIdx.x;
	if (ch < c) {
		double sg = 0.0, sgx = 0.0;
		float m = mean[ch];
		for (int i = 0; i < n; i++) {
			long long off = ((long long)i * c + ch) * s;
			for (int j = 0; j < s; j++) {
				float g = relu && !(y[off + j] > 0.0f) ? 0.0f : dy[off + j];
				sg += g;
				sgx += (double)g * (double)(x[off + j] - m);
			}
		}
		dbeta[ch] = (float)sg;
		dgamma[ch] = (float)(sgx * inv[ch]);
	}
}
