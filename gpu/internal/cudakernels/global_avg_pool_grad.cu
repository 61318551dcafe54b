// global_avg_pool_grad: dx[i] = dy[i/s]·(1/s) for the n = N·C·S elements of dx, the gradient of
// global_avg_pool. One thread per element of dx.
extern "C" __global__ void global_avg_pool_grad(const float* dy, float* dx, int n, int s) {
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n) dx[i] = dy[i / s] * (1.0f / (float)s);
}
