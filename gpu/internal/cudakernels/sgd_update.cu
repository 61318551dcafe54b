// sgd_update: one step of SGD with momentum and weight decay on n weights, PyTorch's rule as optim.SGD
// computes it, with the clipping factor scale (1 when the global norm is within the bound):
//   d = g·scale + decay·w;  v = momentum·v + d;  w −= lr·v;  g = 0 (gradients accumulate between steps).
extern "C" __global__ void sgd_update(float* w, float* g, float* v, int n, float scale, float decay, float momentum, float lr) {
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n) {
		float d = g[i] * scale + decay * w[i];
		float vi = momentum * v[i] + d;
		v[i] = vi;
		w[i] -= lr * vi;
		g[i] = 0.0f;
	}
}
