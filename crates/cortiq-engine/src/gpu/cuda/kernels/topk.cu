// The sampler's candidates on the device: the k largest finite logits (k <= TOPK_MAX), larger
// first and the lower index first among equal values, as the host's `top_candidates` orders
// them. Two launches: every warp takes the k largest of its TOPK_SLICE logits, then one block
// takes the k largest of those and, for a sampled token queued ahead, draws the next token
// from them. (TOPK_MAX, TOPK_PER_LANE, TOPK_KEEP, TOPK_THREADS, TOPK_GATHER: defined by the
// host, `top_k.rs`.)
#define TOPK_SLICE (32 * TOPK_PER_LANE)

// A finite value and its index as one integer ordered as the sampler orders candidates (the
// value by its IEEE total order, -0 below +0; then the lower index); 0 for NaN and +-inf,
// which are never candidates. A finite value's key is never 0 (its high word is at least
// 0x00800000), and no two keys of one launch's values are equal but 0.
__device__ __forceinline__ unsigned long long order_key(float v, int i) {
    if (!isfinite(v)) return 0ull;
    unsigned int u = __float_as_uint(v);
    unsigned int ord = (u & 0x80000000u) ? ~u : (u | 0x80000000u);
    return ((unsigned long long)ord << 32) | (0xffffffffu - (unsigned int)i);
}

// A key's logit and index (order_key undone).
__device__ __forceinline__ float key_value(unsigned long long key) {
    unsigned int ord = (unsigned int)(key >> 32);
    return __uint_as_float((ord & 0x80000000u) ? (ord & 0x7fffffffu) : ~ord);
}
__device__ __forceinline__ int key_index(unsigned long long key) { return (int)(0xffffffffu - (unsigned int)key); }

// The largest of the 32 lanes' m, to every lane: the high words' maximum, then the low words'
// among the lanes holding it.
__device__ __forceinline__ unsigned long long warp_max_key(unsigned long long m) {
    unsigned int hi = (unsigned int)(m >> 32);
    unsigned int top = __reduce_max_sync(0xffffffffu, hi);
    unsigned int lo = __reduce_max_sync(0xffffffffu, hi == top ? (unsigned int)m : 0u);
    return ((unsigned long long)top << 32) | lo;
}

// How many of the n keys in `list` (shared) are larger than `key`, counted by the P (a power
// of two up to 32) consecutive lanes whose t % P is `sub`, each taking every P-th key; every
// lane of the P gets the count. Every lane of the warp must call it with the same P.
__device__ __forceinline__ int rank_among(const unsigned long long* list, int n, unsigned long long key, int sub, int P) {
    int rank = 0;
    for (int j = sub; j < n; j += P) rank += list[j] > key;
    for (int o = P >> 1; o > 0; o >>= 1) rank += __shfl_xor_sync(0xffffffffu, rank, o);
    return rank;
}

// The largest power of two up to 32 with P * n <= TOPK_THREADS: the lanes one of n keys can
// share its rank's count among, in a block of TOPK_THREADS.
__device__ __forceinline__ int lanes_per_key(int n) {
    int P = 1;
    while (P < 32 && 2 * P * n <= TOPK_THREADS) P <<= 1;
    return P;
}

// The largest of every thread's m, to every thread of the block (red: 32 shared keys).
__device__ __forceinline__ unsigned long long block_max_key(unsigned long long m, unsigned long long* red) {
    m = warp_max_key(m);
    if ((threadIdx.x & 31) == 0) red[threadIdx.x >> 5] = m;
    __syncthreads();
    m = (threadIdx.x & 31) < (blockDim.x >> 5) ? red[threadIdx.x & 31] : 0ull;
    m = warp_max_key(m);
    __syncthreads();
    return m;
}

// part (warps, k): warp w's k largest keys among y[w * TOPK_SLICE ..][..TOPK_SLICE] (n
// values in all), descending, 0 past its finite values. Blocks of TOPK_BLOCK_WARPS warps;
// warps past ceil(n / TOPK_SLICE) do nothing. Each lane holds TOPK_PER_LANE keys; the k-th
// largest of the lanes' two largest keys (64 distinct keys, ranked in shared memory) bounds
// the warp's k-th largest from below, so the keys at or above it hold the answer; they are
// gathered into the warp's shared buffer and each written to its place by its rank among
// them (how many of them are larger).
extern "C" __global__ void __launch_bounds__(32 * TOPK_BLOCK_WARPS) topk_warps(const float* y, int n, int k, unsigned long long* part) {
    __shared__ unsigned long long buf[TOPK_BLOCK_WARPS][TOPK_SLICE];
    int warp = (blockIdx.x * blockDim.x + threadIdx.x) >> 5, lane = threadIdx.x & 31;
    if (warp >= (n + TOPK_SLICE - 1) / TOPK_SLICE) return;
    unsigned long long* cand = buf[threadIdx.x >> 5];
    // Every load issued before any key is made (indices past n clamped, their keys 0), so
    // the slice costs one memory round trip.
    float v[TOPK_PER_LANE];
    #pragma unroll
    for (int j = 0; j < TOPK_PER_LANE; j++) v[j] = y[min(warp * TOPK_SLICE + j * 32 + lane, n - 1)];
    unsigned long long keys[TOPK_PER_LANE];
    #pragma unroll
    for (int j = 0; j < TOPK_PER_LANE; j++) {
        int i = warp * TOPK_SLICE + j * 32 + lane;
        keys[j] = i < n ? order_key(v[j], i) : 0ull;
    }
    // The lane's largest key and its second (keys are distinct but for 0).
    auto lane_max = [&](unsigned long long drop) {
        unsigned long long t[TOPK_PER_LANE / 2];
        #pragma unroll
        for (int j = 0; j < TOPK_PER_LANE / 2; j++) {
            unsigned long long a = keys[j], b = keys[j + TOPK_PER_LANE / 2];
            t[j] = max(a == drop ? 0ull : a, b == drop ? 0ull : b);
        }
        #pragma unroll
        for (int s = TOPK_PER_LANE / 4; s > 0; s >>= 1) {
            #pragma unroll
            for (int j = 0; j < s; j++) t[j] = max(t[j], t[j + s]);
        }
        return t[0];
    };
    const unsigned long long m1 = lane_max(0ull), m2 = m1 == 0ull ? 0ull : lane_max(m1);
    cand[lane] = m1;
    cand[32 + lane] = m2;
    __syncwarp();
    int r1 = 0, r2 = 0;
    for (int j = 0; j < 64; j++) {
        unsigned long long c = cand[j];
        r1 += c > m1;
        r2 += c > m2;
    }
    // The bound: the one of the 64 with k - 1 larger (0, taking every finite key, when fewer
    // than k of them are finite).
    unsigned long long mine = (m1 != 0ull && r1 == k - 1) ? m1 : ((m2 != 0ull && r2 == k - 1) ? m2 : 0ull);
    const unsigned long long bound = warp_max_key(mine);
    __syncwarp();
    int len = 0;
    #pragma unroll
    for (int j = 0; j < TOPK_PER_LANE; j++) {
        bool take = keys[j] != 0ull && keys[j] >= bound;
        unsigned int ballot = __ballot_sync(0xffffffffu, take);
        if (take) cand[len + __popc(ballot & ((1u << lane) - 1u))] = keys[j];
        len += __popc(ballot);
    }
    __syncwarp();
    unsigned long long* out = part + (long)warp * k;
    for (int i = lane; i < len; i += 32) {
        unsigned long long key = cand[i];
        int rank = 0;
        for (int j = 0; j < len; j++) rank += cand[j] > key;
        if (rank < k) out[rank] = key;
    }
    for (int r = len + lane; r < k; r += 32) out[r] = 0ull;
}

// The token drawn from the k keys `top` (shared, descending, 0 past the finite ones) as
// `sample::draw` draws with the uniform draw u: probabilities at the temperature, cut by
// min-p then top-p, then the candidate whose slice of the kept mass holds u * kept; every
// sum in f32 in candidate order (by one thread), the per-candidate exp and division by the
// first k threads. Its exp may differ from the host's in the last bit, so a draw within an
// ulp of a slice's edge can differ: the host's own draw decides, and a token queued on
// another draw is dropped. 0 where no candidate is finite. Every thread of the block calls
// it; the token is thread 0's.
__device__ int draw_token(const unsigned long long* top, int k, float temperature, float min_p, float top_p, float u) {
    __shared__ float probs[TOPK_MAX];
    __shared__ float total;
    const int t = threadIdx.x;
    const float first = key_value(top[0]);
    if (t < k && top[t] != 0ull) probs[t] = expf((key_value(top[t]) - first) / temperature);
    // The finite candidates: a prefix of `top`, which is descending with 0 past them.
    const int n = __syncthreads_count(t < k && top[t] != 0ull);
    if (t == 0) {
        float sum = 0.f;
        for (int i = 0; i < n; i++) sum += probs[i];
        total = sum;
    }
    __syncthreads();
    if (t < n) probs[t] = probs[t] / total;
    __syncthreads();
    // min-p keeps the prefix at or above the floor: the probabilities descend as the keys do.
    int keep = __syncthreads_count(t < n && probs[t] >= min_p * probs[0]);
    if (t != 0 || n == 0) return 0;
    keep = max(keep, 1);
    float mass = 0.f;
    for (int i = 0; i < keep; i++) {
        mass += probs[i];
        if (mass >= top_p) {
            keep = i + 1;
            break;
        }
    }
    float kept = 0.f;
    for (int i = 0; i < keep; i++) kept += probs[i];
    float r = u * kept;
    for (int i = 0; i < keep; i++) {
        if (r < probs[i]) return key_index(top[i]);
        r -= probs[i];
    }
    return key_index(top[keep - 1]);
}

// out (k): the k largest keys of part (warps, k), descending, 0 past the finite values. One
// block of TOPK_THREADS threads. Every key of the answer is at least `least`, the larger of
// two lower bounds of the k-th largest key: the largest of the warps' k-th keys (that warp
// alone holds k keys at or above it) and the k-th largest of the warps' first keys (k
// distinct keys at or above it). Only the keys at or above it are gathered into shared
// memory, and each takes its place in the answer by its rank among them (how many gathered
// keys are larger), so no rounds are needed; where more than TOPK_KEEP pass (as when most
// logits are equal) the block's rounds read part itself. Each rank is counted by up to 32
// lanes together (`rank_among`), so its chain of shared loads is short. With `draw`, the
// next token is drawn from them (`draw_token`) into params[0] and *pick, and the position
// params[1] moves on by one, for a token queued behind this one (host: `graph.rs`).
extern "C" __global__ void __launch_bounds__(TOPK_THREADS) topk_merge(const unsigned long long* part, int warps, int k, unsigned long long* out, int draw, float temperature, float min_p, float top_p, float u, int* params, int* pick) {
    __shared__ unsigned long long kept[TOPK_KEEP];
    __shared__ unsigned long long firsts[TOPK_THREADS];
    __shared__ unsigned long long red[32];
    __shared__ unsigned long long top[TOPK_MAX];
    __shared__ unsigned long long kth_first;
    __shared__ int count;
    const int t = threadIdx.x;
    const bool ranked = warps <= TOPK_THREADS && warps >= k;
    unsigned long long m = 0ull;
    for (int w = t; w < warps; w += TOPK_THREADS) m = max(m, part[(long)w * k + k - 1]);
    if (ranked && t < warps) firsts[t] = part[(long)t * k];
    if (t < TOPK_MAX) top[t] = 0ull;
    if (t == 0) {
        count = 0;
        kth_first = 0ull;
    }
    unsigned long long least = block_max_key(m, red);
    if (ranked) {
        const int P = lanes_per_key(warps), c = t / P;
        const unsigned long long key = c < warps ? firsts[c] : 0ull;
        int rank = rank_among(firsts, key == 0ull ? 0 : warps, key, t % P, P);
        if (t % P == 0 && key != 0ull && rank == k - 1) kth_first = key;
        __syncthreads();
        least = max(least, kth_first);
    }
    // The gather, TOPK_GATHER keys a thread at a time, all loaded before any is tested (one
    // memory round trip a batch; indices past the end clamped and not taken).
    const long total = (long)warps * k;
    for (long i0 = t; i0 < total; i0 += (long)TOPK_THREADS * TOPK_GATHER) {
        unsigned long long batch[TOPK_GATHER];
        #pragma unroll
        for (int j = 0; j < TOPK_GATHER; j++) batch[j] = part[min(i0 + (long)j * TOPK_THREADS, total - 1)];
        #pragma unroll
        for (int j = 0; j < TOPK_GATHER; j++) {
            unsigned long long key = batch[j];
            if (i0 + (long)j * TOPK_THREADS < total && key != 0ull && key >= least) {
                int at = atomicAdd(&count, 1);
                if (at < TOPK_KEEP) kept[at] = key;
            }
        }
    }
    __syncthreads();
    const int len = count;
    if (len <= TOPK_KEEP) {
        const int P = lanes_per_key(len);
        for (int i0 = 0; i0 < len; i0 += TOPK_THREADS / P) {
            const int i = i0 + t / P;
            const unsigned long long key = i < len ? kept[i] : 0ull;
            int rank = rank_among(kept, i < len ? len : 0, key, t % P, P);
            if (t % P == 0 && i < len && rank < k) top[rank] = key;
        }
    } else {
        unsigned long long last = ~0ull;
        for (int r = 0; r < k; r++) {
            m = 0ull;
            for (long i = t; i < total; i += TOPK_THREADS) {
                unsigned long long key = part[i];
                if (key < last && key >= least) m = max(m, key);
            }
            m = block_max_key(m, red);
            if (t == 0) top[r] = m;
            last = m;
        }
    }
    __syncthreads();
    if (t < k) out[t] = top[t];
    if (!draw) return;
    int token = draw_token(top, k, temperature, min_p, top_p, u);
    if (t == 0) {
        params[0] = token;
        params[1] += 1;
        *pick = token;
    }
}

// The greedy token after this one, the argmax in *best (matvec.cu's argmax_key; token 0 when
// no logit was a number), into params[0] and *pick, and the position params[1] moved on by
// one, for a token queued behind this one (host: `graph.rs`). One thread.
extern "C" __global__ void pick_argmax(const unsigned long long* best, int* params, int* pick) {
    unsigned long long key = *best;
    int token = key == 0ull ? 0 : key_index(key);
    params[0] = token;
    params[1] += 1;
    *pick = token;
}
