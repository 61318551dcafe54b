// gelu_forward: the exact GELU of ops.GELU, y = x·Φ(x) with Φ(x) = (1 + erf(x/√2))/2.
extern "C" __global__ void gelu_forward(const float* x, float* y, int n) {
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n) y[i] = x[i] * 0.5f * (1.0f + erff(x[i] * 0.70710678118654752f));
}
