// shim.h lets the host C++ compiler compile the CUDA C kernels of this folder unchanged, for the tests of
// machines without a GPU: it defines the CUDA built-ins the kernels use and runs a launch's grid as loops,
// block after block and, in each block, thread after thread. Kernels here use no shared memory and no
// barriers (__shared__ and __syncthreads are left undefined, so a kernel that starts using them fails to
// compile here until the shim emulates them), so running the threads one after another is a valid schedule.
#include <math.h>
#include <stddef.h>
#include <string.h>
#include <utility>

struct bicyc_dim3 {
	unsigned x, y, z;
};
static bicyc_dim3 blockIdx, threadIdx, blockDim, gridDim;

#define __global__
#define __device__ static inline
#define __forceinline__

// bicyc_call calls kernel k with its parameters, each read through a pointer as cuLaunchKernel reads them.
template <typename... A, size_t... I>
static void bicyc_call(void (*k)(A...), void **params, std::index_sequence<I...>) {
	k(*static_cast<A *>(params[I])...);
}

// bicyc_run runs the grid g of blocks b of kernel k.
template <typename... A>
static void bicyc_run(void (*k)(A...), bicyc_dim3 g, bicyc_dim3 b, void **params) {
	gridDim = g;
	blockDim = b;
	for (blockIdx.z = 0; blockIdx.z < g.z; blockIdx.z++)
		for (blockIdx.y = 0; blockIdx.y < g.y; blockIdx.y++)
			for (blockIdx.x = 0; blockIdx.x < g.x; blockIdx.x++)
				for (threadIdx.z = 0; threadIdx.z < b.z; threadIdx.z++)
					for (threadIdx.y = 0; threadIdx.y < b.y; threadIdx.y++)
						for (threadIdx.x = 0; threadIdx.x < b.x; threadIdx.x++)
							bicyc_call(k, params, std::index_sequence_for<A...>{});
}
