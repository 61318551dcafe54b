// bn_eval_backward_data: the input gradient of the evaluation-mode batch norm y = a[c]·x + b[c] (then ReLU if
// relu is not 0) over x [N,C,S]: dx = a[c]·g with g = dy, or 0 where the fused ReLU's output y is not
// positive. One thread per element.
extern "C" __global__ void bn_eval_backward_data(const float* dy, const float* y, const float* a, float* dx, int n, int c, int s, int relu) {
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n) {
		float g = relu && !(y[i] > 0.0f) ? 0.0f : dy[i];
		dx[i] = a[(i / s) % c] * g;
	}
}
