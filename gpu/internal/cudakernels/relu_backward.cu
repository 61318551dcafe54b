// relu_backward: dx = dy where the forward output y is positive, 0 elsewhere (ops.ReLU's convention at 0).
extern "C" __global__ void relu_backward(const float* y, const float* dy, float* dx, int n) {
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n) dx[i] = y[i] > 0.0f ? dy[i] : 0.0f;
}
