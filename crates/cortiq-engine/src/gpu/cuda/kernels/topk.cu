// The sampler's candidates on the device: the k largest finite logits (k <= TOPK_MAX), larger
// first and the lower index first among equal values, as the host's `top_candidates` orders
// them. Two launches: every warp takes the k largest of its TOPK_SLICE logits, then one block
// takes the k largest of those. (TOPK_MAX, TOPK_PER_LANE, TOPK_KEEP, TOPK_THREADS: defined
// by the host, `top_k.rs`.)
#define TOPK_SLICE (32 * TOPK_PER_LANE)

// A finite value and its index as one integer ordered as the sampler orders candidates (the
// value by its IEEE total order, -0 below +0; then the lower index); 0 for NaN and +-inf,
// which are never candidates. A finite value's key is never 0 (its high word is at least
// 0x00800000).
__device__ __forceinline__ unsigned long long order_key(float v, int i) {
    if (!isfinite(v)) return 0ull;
    unsigned int u = __float_as_uint(v);
    unsigned int ord = (u & 0x80000000u) ? ~u : (u | 0x80000000u);
    return ((unsigned long long)ord << 32) | (0xffffffffu - (unsigned int)i);
}

// The largest of every thread's m, to every thread of the block (red: 32 shared keys).
__device__ __forceinline__ unsigned long long block_max_key(unsigned long long m, unsigned long long* red) {
    for (int o = 16; o; o >>= 1) m = max(m, __shfl_xor_sync(0xffffffffu, m, o));
    if ((threadIdx.x & 31) == 0) red[threadIdx.x >> 5] = m;
    __syncthreads();
    m = (threadIdx.x & 31) < (blockDim.x >> 5) ? red[threadIdx.x & 31] : 0ull;
    for (int o = 16; o; o >>= 1) m = max(m, __shfl_xor_sync(0xffffffffu, m, o));
    __syncthreads();
    return m;
}

// part (warps, k): warp w's k largest keys among y[w * TOPK_SLICE ..][..TOPK_SLICE] (n
// values in all), descending, 0 past its finite values. Threads: 32 per warp, any block size
// that is a multiple of 32; warps past ceil(n / TOPK_SLICE) do nothing. Each round takes the
// largest key below the last one taken, so nothing needs marking.
extern "C" __global__ void topk_warps(const float* y, int n, int k, unsigned long long* part) {
    int warp = (blockIdx.x * blockDim.x + threadIdx.x) >> 5, lane = threadIdx.x & 31;
    if (warp >= (n + TOPK_SLICE - 1) / TOPK_SLICE) return;
    unsigned long long keys[TOPK_PER_LANE];
    #pragma unroll
    for (int j = 0; j < TOPK_PER_LANE; j++) {
        int i = warp * TOPK_SLICE + j * 32 + lane;
        keys[j] = i < n ? order_key(y[i], i) : 0ull;
    }
    unsigned long long last = ~0ull;
    for (int r = 0; r < k; r++) {
        unsigned long long m = 0ull;
        #pragma unroll
        for (int j = 0; j < TOPK_PER_LANE; j++) {
            if (keys[j] < last) m = max(m, keys[j]);
        }
        for (int o = 16; o; o >>= 1) m = max(m, __shfl_xor_sync(0xffffffffu, m, o));
        if (lane == 0) part[(long)warp * k + r] = m;
        last = m;
    }
}

// out (k): the k largest keys of part (warps, k), descending, 0 past the finite values. One
// block of TOPK_THREADS threads. Every key of the answer is at least `least`, the largest of
// the warps' k-th keys (that warp alone holds k keys at or above it), so only those keys are
// gathered into shared memory (read from part itself when more than TOPK_KEEP pass, as when
// most logits are equal); then k rounds, each the block's largest key below the last.
extern "C" __global__ void __launch_bounds__(TOPK_THREADS) topk_merge(const unsigned long long* part, int warps, int k, unsigned long long* out) {
    __shared__ unsigned long long kept[TOPK_KEEP];
    __shared__ unsigned long long red[32];
    __shared__ int count;
    const int t = threadIdx.x;
    unsigned long long m = 0ull;
    for (int w = t; w < warps; w += TOPK_THREADS) m = max(m, part[(long)w * k + k - 1]);
    const unsigned long long least = block_max_key(m, red);
    if (t == 0) count = 0;
    __syncthreads();
    const long total = (long)warps * k;
    for (long i = t; i < total; i += TOPK_THREADS) {
        unsigned long long key = part[i];
        if (key != 0ull && key >= least) {
            int at = atomicAdd(&count, 1);
            if (at < TOPK_KEEP) kept[at] = key;
        }
    }
    __syncthreads();
    const bool fits = count <= TOPK_KEEP;
    const unsigned long long* src = fits ? kept : part;
    const long len = fits ? count : total;
    unsigned long long last = ~0ull;
    for (int r = 0; r < k; r++) {
        m = 0ull;
        for (long i = t; i < len; i += TOPK_THREADS) {
            unsigned long long key = src[i];
            if (key < last && key >= least) m = max(m, key);
        }
        m = block_max_key(m, red);
        if (t == 0) out[r] = m;
        last = m;
    }
}
