// gelu_backward: dx = dy·gelu'(x) with gelu'(x) = Φ(x) + x·φ(x), from the forward input x.
extern "C" __global__ void gelu_backward(const float* x, const float* dy, float* dx, int n) {
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n) {
		float v = x[i];
		float cdf = 0.5f * (1.0f + erff(v * 0.70710678118654752f));
		float pdf = 0.39894228040143268f * expf(-0.5f * v * v);
		dx[i] = dy[i] * (cdf + v * pdf);
	}
}
