// squared_difference_backward: the gradients of scale/2·Σ (a − b)², da = scale·(a − b) and db = −da; for the
// mean squared error of n values with incoming gradient g, scale = 2·g/n. One thread per element.
extern "C" __global__ void squared_difference_backward(const float* a, const float* b, float* da, float* db, int n, float scale) {
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n) {
		float d = scale * (a[i] - b[i]);
		da[i] = d;
		db[i] = -d;
	}
}
