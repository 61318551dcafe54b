// relu_forward: y = max(x, 0) element-wise, one thread per element.
extern "C" __global__ void relu_forward(const float* x, float* y, int n) {
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n) y[i] = x[i] > 0.0f ? x[i] : 0.0f;
}
