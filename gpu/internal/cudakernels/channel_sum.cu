// channel_sum: db[c] = Σ over N and S of dy[n,c,s] for dy [N,C,S], accumulated in double; one thread per
// channel (no shared memory or barriers), the bias gradient of ops.AddChannelBias.
extern "C" __global__ void channel_sum(const float* dy, float* db, int n, int c, int s) {
	int ch = blockIdx.x * blockDim.x + threadIdx.x;
	if (ch < c) {
		double acc = 0.0;
		for (int i = 0; i < n; i++) {
			const float* p = dy + ((long long)i * c + ch) * s;
			for (int j = 0; j < s; j++) acc += p[j];
		}
		db[ch] = (float)acc;
	}
}
