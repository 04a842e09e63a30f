// Kernels of the CUDA whole-token decode graph (compiled in one module after matvec.cu,
// whose helpers they use). One token per launch sequence; shapes come in as arguments;
// token and position are read from device memory so a captured graph can be replayed.

// Unit iu's scale and offset in a q4k matrix whose records start at a (rows are whole
// superblocks, so unit iu is in superblock iu / 8): d * sc and -dmin * m.
__device__ __forceinline__ float2 q4k_unit_scale(const unsigned int* a, long iu) {
    const unsigned int* r = a + (iu >> 3) * 5;
    unsigned int p = r[1 + ((iu & 7) >> 1)] >> (16 * (iu & 1));
    return make_float2(h2f(r[0] & 0xffff) * (float)(p & 0xff), -h2f(r[0] >> 16) * (float)((p >> 8) & 0xff));
}

// The fifth bit of value v (0..31) of q5k unit iu (`dot_high1`'s place: bit 8 (v % 4) + v / 4
// of its high-bit word) in a matrix whose records start at word a_off of w.
__device__ __forceinline__ int q5k_high1(const unsigned char* w, int a_off, long iu, int v) {
    return (int)((((const unsigned int*)w)[q5k_high_off(a_off) + iu] >> (8 * (v & 3) + (v >> 2))) & 1);
}

// The same for q51 unit iu (its high-bit words from q51_high_off(a_off)).
__device__ __forceinline__ int q51_high1(const unsigned char* w, int a_off, long iu, int v) {
    return (int)((((const unsigned int*)w)[q51_high_off(a_off) + iu] >> (8 * (v & 3) + (v >> 2))) & 1);
}

// The high 2 bits of value v16 (0..15) of a q6 unit's half, from that half's record word
// (`dot_high2`'s place: bits 8 (v16 % 4) + 2 (v16 / 4)).
__device__ __forceinline__ int q6_high2(unsigned int h, int v16) {
    return (int)((h >> (8 * (v16 & 3) + 2 * (v16 >> 2))) & 3);
}

// out (rows, cols): row b (blockIdx.y) = row token[b] of a planar matrix (see matvec.cu),
// decoded, times `scale` (the family's embedding scale); *best = 0 for the head's argmax
// (the first kernel of a token or a prefill chunk, so nothing else touches it meanwhile),
// and the pending part xa (cols + 1) zeroed where given (one row: a token graph with the
// fused FFN).
extern "C" __global__ void embed_row(const unsigned char* w, int kind, int a_off, const int* token, float* out, int cols, unsigned long long* best, long long* xa, float scale) {
    TRACE_BLOCK(1);
    pdl_wait_then_release();
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i == 0 && blockIdx.y == 0) *best = 0ull;
    if (xa && i <= cols) xa[i] = 0ll;
    if (i >= cols) return;
    long row = token[blockIdx.y];
    out += (long)blockIdx.y * cols;
    int j = i & 31;
    long iu = row * (cols >> 5) + (i >> 5);
    const unsigned int* a = (const unsigned int*)w + a_off;
    float v;
    if (kind == 0 || kind == 1 || kind == KIND_Q4K || kind == KIND_Q5K || kind == KIND_Q51) {
        unsigned char q = w[iu * 16 + (j & 15)];
        int n = j < 16 ? (q & 15) : (q >> 4);
        if (kind == KIND_Q5K) n |= q5k_high1(w, a_off, iu, j) << 4;
        if (kind == KIND_Q51) n |= q51_high1(w, a_off, iu, j) << 4;
        if (kind == 0) {
            v = h2f(((const unsigned short*)a)[iu]) * (float)(n - 8);
        } else {
            float2 s = kind == KIND_Q4K || kind == KIND_Q5K ? q4k_unit_scale(a, iu) : make_float2(h2f(a[iu] & 0xffff), h2f(a[iu] >> 16));
            v = s.x * (float)n + s.y;
        }
    } else if (kind == 2) {
        v = h2f(((const unsigned short*)a)[iu]) * (float)(signed char)w[iu * 32 + j];
    } else if (kind == KIND_Q6) {
        // The level: the nibble (Q4_0's place), the high 2 bits (dot_high2's place in the
        // record's word for its half); minus 32, times d and the half's scale.
        unsigned char q = w[iu * 16 + (j & 15)];
        int level = (j < 16 ? (q & 15) : (q >> 4)) | q6_high2(a[3 * iu + (j >> 4)], j & 15) << 4;
        unsigned int s = a[3 * iu + 2];
        v = h2f(s & 0xffff) * (float)((int)(signed char)(s >> (16 + 8 * (j >> 4))) * (level - 32));
    } else if (kind == 3) {
        v = h2f(((const unsigned short*)w)[row * cols + i]);
    } else {
        v = ((const float*)w)[row * cols + i];
    }
    out[i] = v * scale;
}

// Causal attention of queries at positions *pos + z (z = blockIdx.z, one per prompt row; 1
// for a decode token) over the KV mirror, split by positions (flash-decoding): block (h, c,
// z) takes positions [64 c, 64 c + 64) of head h. Its K and V loads (the f16 mirror, kv_t)
// are all issued first (each thread holds HD / 16 4-value columns of K, a quarter of one
// position's K row; of V as many, one 4-value column over every `groups`-th position, or
// where `att_v_shared` none: the chunk's V rows are copied into shared memory by cp.async),
// so the chunk costs one memory round trip;
// the chunk's max and sum of exps are warp reductions. A context of one chunk writes out
// directly; otherwise each block writes its partial (exp-weighted V sum, max, sum of exps)
// to `part` (rows, n_head, splits, head_dim + 2), and `attention_merge`, the next kernel,
// merges them into out (rows, n_head * head_dim): a kernel boundary costs less than the last
// block of a head merging after a fence and a counter did (NOTES.md, session 23). The loads
// of mirror rows older than this launch's go out before the wait for the kernel before
// (programmatic dependent launch), so they overlap its tail. Blocks past the row's position
// exit at once, so the grid is sized for the whole context and captured once. 256 threads (4
// per position of a chunk); head_dim <= HD, a multiple of 16. From `group_from` positions
// (the host's `att_group.rs`) the 128-wide kernel, and the 64-wide one for heads of 64, take
// each KV head's chunk for all its query heads in one block instead (attention_group,
// attention_group64).
#define ATT_CHUNK 64

// Chunks of the split attention for a query at context length n (its position + 1): the split
// writes out directly where this is 1, and attention_merge merges where it is more.
__device__ __forceinline__ int att_chunks(int n) { return (n + ATT_CHUNK - 1) / ATT_CHUNK; }

// The weight that rescales sums kept under max m to a larger max top (1 where they are equal,
// so two maxima of -inf give 1 rather than NaN).
__device__ __forceinline__ float rescale_weight(float m, float top) { return m == top ? 1.f : expf(m - top); }

// Whether the split kernel for heads up to HD copies its chunk's V rows into shared memory
// by cp.async instead of holding them in registers: at 128 that takes attention_h128 from 110
// registers (2 blocks a SM, llama-8b's ~300 blocks in two waves) to 67 (3 blocks, one wave),
// +1.8-2.3 % decode on llama-8b; at 64 the registers already allow 4 blocks and the copy's
// extra round through shared memory cost smollm2 and llama-1b 3-5 % (NOTES.md, session 26);
// at 256 the rows would not fit static shared memory.
__host__ __device__ constexpr bool att_v_shared(int hd) { return hd == 128; }

// Most query heads a KV head's grouped block takes (attention_group: warp w the softmax of
// head w, and G x head_dim / 4 <= 256 threads for the V sums).
#define ATT_GROUP_MAX 8

// Whether the split kernel for heads up to HD takes the grouped path for a query at context
// length n: the kernel whose V rows go through shared memory (att_v_shared: attention_group),
// or the 64-wide kernel for heads of exactly 64 (attention_group64: V in registers, since V in
// shared memory there cost llama-1b 2.8 % on the per-head path at 640 positions, NOTES.md
// session 42); G query heads a KV head (2 .. ATT_GROUP_MAX), a context of two chunks or more
// and at least `group_from` positions (the host's setting).
template <int HD>
__device__ __forceinline__ bool att_grouped(int G, int head_dim, int n, int group_from) {
    return (att_v_shared(HD) || (HD == 64 && head_dim == 64)) && G >= 2 && G <= ATT_GROUP_MAX && n > ATT_CHUNK && n >= group_from;
}

// The grouped paths' scores: position j's K quarter (this thread's registers, f16) against each of
// the G heads' queries qg (G, head_dim), summed over the position's 4 threads, into sc (G,
// ATT_CHUNK) scaled, -inf past the chunk's cnt positions.
template <int NV>
__device__ __forceinline__ void group_scores(const uint2 (&kr)[NV], const float* qg, int head_dim, int G, int j, int quarter, int cnt, float scale, float* sc) {
    int span4 = head_dim >> 4;
    float4 kf[NV];
    #pragma unroll
    for (int e = 0; e < NV; e++) kf[e] = kv_float4(kr[e]);
    for (int hh = 0; hh < G; hh++) {
        float s = 0.f;
        #pragma unroll
        for (int e = 0; e < NV; e++) {
            if (e < span4) {
                float4 q4 = ((const float4*)(qg + hh * head_dim))[e * 4 + quarter];
                s += kf[e].x * q4.x + kf[e].y * q4.y + kf[e].z * q4.z + kf[e].w * q4.w;
            }
        }
        s += __shfl_xor_sync(0xffffffffu, s, 1);
        s += __shfl_xor_sync(0xffffffffu, s, 2);
        if (quarter == 0) sc[hh * ATT_CHUNK + j] = j < cnt ? s * scale : -__int_as_float(0x7f800000);
    }
}

// The grouped paths' softmax: warp w < G takes head w's scores sc (G, ATT_CHUNK), replaces
// them by their exps under the chunk's max and writes that max and the sum of exps to msum
// (maxima, then sums, ATT_GROUP_MAX apart).
__device__ __forceinline__ void group_softmax(float* sc, float* msum, int G, int warp, int lane) {
    if (warp >= G) return;
    float* sw = sc + warp * ATT_CHUNK;
    float a0 = sw[lane], a1 = sw[lane + 32];
    float m = warp_max(fmaxf(a0, a1));
    float e0 = expf(a0 - m), e1 = expf(a1 - m);
    float sum = warp_sum(e0 + e1);
    sw[lane] = e0;
    sw[lane + 32] = e1;
    if (lane == 0) {
        msum[warp] = m;
        msum[ATT_GROUP_MAX + warp] = sum;
    }
}

// The chunk's V rows [0, cnt) (vb: its first, kvd values apart) copied as the mirror holds
// them into vs (ATT_CHUNK, head_dim) by 16-byte cp.async, one commit group: those at or past
// p0 (fresh) or those before it (ATT_CHUNK x HD / 8 pieces over 256 threads).
template <int HD>
__device__ __forceinline__ void copy_v_rows(kv_t* vs, const kv_t* vb, int kvd, int head_dim, int t0, int cnt, int p0, bool fresh) {
    int c8n = head_dim >> 3;
    #pragma unroll
    for (int e = 0; e < HD / 32; e++) {
        int i = threadIdx.x + e * 256, jj = i / c8n, c8 = i - jj * c8n;
        if (jj < cnt && (t0 + jj >= p0) == fresh) cp_async16(vs + jj * head_dim + 8 * c8, vb + (long)jj * kvd + 8 * c8);
    }
    cp_commit();
}

// Where a split-attention block (h, c, z) works, per head or grouped (h then the group's
// first head): its chunk's first position t0 and positions cnt (of a context of n), the
// mirror's row width kvd, and kb / vb the chunk's first K / V rows of KV head h / G; q and
// part are moved to query row z (q also to head h).
struct ChunkAt {
    int t0, cnt, kvd;
    const kv_t *kb, *vb;
};
__device__ __forceinline__ ChunkAt chunk_at(const float*& q, float*& part, const kv_t* kc, const kv_t* vc, int n_head, int n_head_kv, int head_dim, int n, int splits) {
    int h0 = blockIdx.x, z = blockIdx.z, G = n_head / n_head_kv, t0 = blockIdx.y * ATT_CHUNK, kvd = n_head_kv * head_dim;
    q += ((long)z * n_head + h0) * head_dim;
    part += (long)z * n_head * splits * (head_dim + 2);
    const kv_t* kb = kc + (long)t0 * kvd + h0 / G * head_dim;
    return ChunkAt{t0, min(ATT_CHUNK, n - t0), kvd, kb, vc + (kb - kc)};
}

// The split attention's chunk for all G query heads of one KV head (heads h0 .. h0 + G - 1,
// block (h0, c, z) with h0 a multiple of G; the other blocks of the group exit): K and V are
// loaded once for the group instead of once per query head (llama's 4 query heads a KV head:
// llama-8b decodes 14 % faster after a 4096-token prompt, 5 % slower after 512, where the
// grouped grid leaves SMs idle; NOTES.md session 42). K as the per-head path holds it (a
// quarter of one position's row a thread, in registers), V copied into shared memory (the
// per-head path's `vs`); scores of every head from the same K registers; warp w the softmax
// of head w; thread (slice s, head, float4 column) sums V over positions s, s + S, ... and
// the slices meet in shared memory. Writes the G heads' partials as the per-head path does, so
// attention_merge is the same. Shared buffers are the per-head path's: vs (ATT_CHUNK,
// head_dim), qg (G, head_dim) the group's queries, then the V sums' slices (in `acc`), sc
// (G, ATT_CHUNK), msum the heads' maxima then sums of exps.
template <int HD>
__device__ __forceinline__ void attention_group(const float* q, const kv_t* kc, const kv_t* vc, float* part, int n_head, int n_head_kv, int head_dim, int p0, int n, float scale, int splits, kv_t* vs, float* qg, float* sc, float* msum) {
    constexpr int NV = HD / 16;
    int h0 = blockIdx.x, c = blockIdx.y, tid = threadIdx.x, lane = tid & 31, warp = tid >> 5, G = n_head / n_head_kv;
    const ChunkAt ch = chunk_at(q, part, kc, vc, n_head, n_head_kv, head_dim, n, splits);
    const int t0 = ch.t0, cnt = ch.cnt, kvd = ch.kvd;
    const kv_t *kb = ch.kb, *vb = ch.vb;
    int j = tid >> 2, quarter = tid & 3, span4 = head_dim >> 4, v4 = head_dim >> 2;
    const float4 zero = make_float4(0.f, 0.f, 0.f, 0.f);
    uint2 kr[NV];
    auto load = [&](bool fresh) {
        #pragma unroll
        for (int e = 0; e < NV; e++) {
            if (j < cnt && e < span4 && (t0 + j >= p0) == fresh) kr[e] = kv_raw4(kb + (long)j * kvd + 4 * (e * 4 + quarter));
        }
        copy_v_rows<HD>(vs, vb, kvd, head_dim, t0, cnt, p0, fresh);
    };
    #pragma unroll
    for (int e = 0; e < NV; e++) kr[e] = make_uint2(0u, 0u);
    load(false);
    pdl_wait_then_release();
    load(true);
    for (int d = tid; d < G * head_dim; d += blockDim.x) qg[d] = q[d];
    __syncthreads();
    group_scores<NV>(kr, qg, head_dim, G, j, quarter, cnt, scale, sc);
    __syncthreads();
    group_softmax(sc, msum, G, warp, lane);
    cp_wait<0>();
    __syncthreads();
    // pairs = G x v4 <= 256 (head, float4 column) pairs, S position slices of them.
    int pairs = G * v4, S = blockDim.x / pairs;
    float4* slices = (float4*)qg;  // (S, pairs), the queries no longer needed
    if (tid < pairs * S) {
        int s = tid / pairs, pr = tid - s * pairs, hh = pr / v4, c4 = pr - hh * v4;
        const float* p = sc + hh * ATT_CHUNK;
        float4 a = zero;
        for (int jj = s; jj < cnt; jj += S) {
            float w = p[jj];
            float4 v = kv_load4(vs + (jj * v4 + c4) * 4);
            a.x += w * v.x;
            a.y += w * v.y;
            a.z += w * v.z;
            a.w += w * v.w;
        }
        slices[tid] = a;
    }
    __syncthreads();
    for (int o = tid; o < G * head_dim; o += blockDim.x) {
        int hh = o / head_dim, d = o - hh * head_dim;
        float vsum = 0.f;
        for (int s = 0; s < S; s++) vsum += qg[(s * pairs + hh * v4 + (d >> 2)) * 4 + (d & 3)];
        float* pp = part + ((long)(h0 + hh) * splits + c) * (head_dim + 2);
        pp[d] = vsum;
        if (d == 0) {
            pp[head_dim] = msum[hh];
            pp[head_dim + 1] = msum[ATT_GROUP_MAX + hh];
        }
    }
}

// attention_group for heads of exactly 64 values in the 64-wide kernel, in the per-head
// path's shared memory: K and V in registers as the per-head path holds them (V: thread (g,
// c4) 4-value column c4 of positions g, g + 16, ...), the group's queries and then its scores
// in `acc` (G x 64 <= 512 floats each), and each head's V sums reduced in turn: the two
// position groups of a warp by a shuffle, the 8 warps through acc's first half.
__device__ __forceinline__ void attention_group64(const float* q, const kv_t* kc, const kv_t* vc, float* part, int n_head, int n_head_kv, int p0, int n, float scale, int splits, float* acc, float* msum) {
    constexpr int HD = 64, NV = HD / 16;
    int h0 = blockIdx.x, c = blockIdx.y, tid = threadIdx.x, lane = tid & 31, warp = tid >> 5, G = n_head / n_head_kv;
    const ChunkAt ch = chunk_at(q, part, kc, vc, n_head, n_head_kv, HD, n, splits);
    const int t0 = ch.t0, cnt = ch.cnt, kvd = ch.kvd;
    const kv_t *kb = ch.kb, *vb = ch.vb;
    int j = tid >> 2, quarter = tid & 3, g = tid >> 4, c4 = tid & 15;
    const float4 zero = make_float4(0.f, 0.f, 0.f, 0.f);
    uint2 kr[NV], vr[NV];  // as the mirror holds them
    auto load = [&](bool fresh) {
        #pragma unroll
        for (int e = 0; e < NV; e++) {
            if (j < cnt && (t0 + j >= p0) == fresh) kr[e] = kv_raw4(kb + (long)j * kvd + 4 * (e * 4 + quarter));
            int jj = g + e * 16;
            if (jj < cnt && (t0 + jj >= p0) == fresh) vr[e] = kv_raw4(vb + (long)jj * kvd + 4 * c4);
        }
    };
    #pragma unroll
    for (int e = 0; e < NV; e++) kr[e] = vr[e] = make_uint2(0u, 0u);
    load(false);
    pdl_wait_then_release();
    load(true);
    float *qg = acc, *sc = acc + ATT_GROUP_MAX * HD;
    for (int d = tid; d < G * HD; d += blockDim.x) qg[d] = q[d];
    __syncthreads();
    group_scores<NV>(kr, qg, HD, G, j, quarter, cnt, scale, sc);
    __syncthreads();
    group_softmax(sc, msum, G, warp, lane);
    __syncthreads();
    for (int hh = 0; hh < G; hh++) {
        const float* p = sc + hh * ATT_CHUNK;
        float4 a = zero;
        #pragma unroll
        for (int e = 0; e < NV; e++) {
            int jj = g + e * 16;
            if (jj < cnt) {
                float w = p[jj];
                float4 v = kv_float4(vr[e]);
                a.x += w * v.x;
                a.y += w * v.y;
                a.z += w * v.z;
                a.w += w * v.w;
            }
        }
        a.x += __shfl_xor_sync(0xffffffffu, a.x, 16);
        a.y += __shfl_xor_sync(0xffffffffu, a.y, 16);
        a.z += __shfl_xor_sync(0xffffffffu, a.z, 16);
        a.w += __shfl_xor_sync(0xffffffffu, a.w, 16);
        if (lane < 16) ((float4*)acc)[warp * 16 + lane] = a;  // acc (8 warps, 64)
        __syncthreads();
        if (tid < HD) {
            float vsum = 0.f;
            #pragma unroll
            for (int w = 0; w < 8; w++) vsum += acc[w * HD + tid];
            float* pp = part + ((long)(h0 + hh) * splits + c) * (HD + 2);
            pp[tid] = vsum;
            if (tid == 0) {
                pp[HD] = msum[hh];
                pp[HD + 1] = msum[ATT_GROUP_MAX + hh];
            }
        }
        __syncthreads();
    }
}

// The first position a query at context length n sees: n - window on a sliding-window
// layer (window > 0), else 0.
__device__ __forceinline__ int att_first(int n, int window) { return window > 0 ? max(0, n - window) : 0; }

// WINDOWED: the kernel takes `window` (attention_window_h*); without it the window is 0 at
// compile time, so the llama block's kernels carry none of its arithmetic.
template <int HD, bool WINDOWED>
__device__ __forceinline__ void attention_split(const float* q, const kv_t* kc, const kv_t* vc, float* part, float* out, unsigned char* oimg, int n_head, int n_head_kv, int head_dim, const int* pos, float scale, int splits, int group_from, int window) {
    if (!WINDOWED) window = 0;
    constexpr int NV = HD / 16;
    constexpr bool VS = att_v_shared(HD);
    __shared__ __align__(16) kv_t vs[VS ? ATT_CHUNK * HD : 8];  // (positions, head_dim) the chunk's V rows where VS
    __shared__ __align__(16) float qs[HD];
    __shared__ float sc[(VS ? ATT_GROUP_MAX : 1) * ATT_CHUNK];  // scores (heads of the grouped path, positions)
    __shared__ __align__(16) float acc[1024];  // (groups, head_dim) V sums of each position group
    __shared__ float msum[2 * ATT_GROUP_MAX];
    // *pos was written before the token's first kernel; the mirror rows before it by earlier
    // tokens or chunks: both may be read before waiting for the kernel before this one.
    int h = blockIdx.x, c = blockIdx.y, z = blockIdx.z, tid = threadIdx.x, lane = tid & 31;
    int p0 = *pos, n = p0 + z + 1, t0 = c * ATT_CHUNK, lo = att_first(n, window);
    if (t0 >= n || t0 + ATT_CHUNK <= lo) return;
    int G = n_head / n_head_kv;
    if (window == 0 && att_grouped<HD>(G, head_dim, n, group_from)) {
        if (h % G == 0) {
            if (VS) attention_group<HD>(q, kc, vc, part, n_head, n_head_kv, head_dim, p0, n, scale, splits, vs, acc, sc, msum);
            else attention_group64(q, kc, vc, part, n_head, n_head_kv, p0, n, scale, splits, acc, msum);
        }
        return;
    }
    out += (long)z * n_head * head_dim + h * head_dim;
    const ChunkAt ch = chunk_at(q, part, kc, vc, n_head, n_head_kv, head_dim, n, splits);
    const int cnt = ch.cnt, kvd = ch.kvd;
    const kv_t *kb = ch.kb, *vb = ch.vb;
    const float4 zero = make_float4(0.f, 0.f, 0.f, 0.f);
    // Output dimension tid (< head_dim): to out, and with oimg (one query row, head_dim a
    // multiple of 32, so whole warps call) into the int8 image of the attention row.
    auto emit = [&](float o) {
        out[tid] = o;
        if (oimg) store_unit(o, (h * head_dim + tid) >> 5, n_head * head_dim, oimg);
    };
    // K: position j, 4-value columns quarter, quarter + 4, ... (so a warp's load instruction
    // takes whole 32-byte sectors: llama-8b decode +2-5 %, NOTES.md session 27); V: 4-value
    // column c4 of positions g, g + groups, ... (into registers, or where VS copied to shared
    // memory; either as the mirror holds them)
    int j = tid >> 2, quarter = tid & 3, span4 = head_dim >> 4;
    int v4 = head_dim >> 2, groups = blockDim.x / v4, g = tid / v4, c4 = tid % v4;
    uint2 kr[NV], vr[NV];  // as the mirror holds them
    // The loads of rows before *pos (fresh = false) go out before the wait, those of the rows
    // this launch's QKV kernel appended (fresh = true) after it.
    auto load = [&](bool fresh) {
        #pragma unroll
        for (int e = 0; e < NV; e++) {
            if (j < cnt && e < span4 && (t0 + j >= p0) == fresh) kr[e] = kv_raw4(kb + (long)j * kvd + 4 * (e * 4 + quarter));
            int jj = g + e * groups;
            if (!VS && g < groups && jj < cnt && (t0 + jj >= p0) == fresh) vr[e] = kv_raw4(vb + (long)jj * kvd + 4 * c4);
        }
        if (VS) copy_v_rows<HD>(vs, vb, kvd, head_dim, t0, cnt, p0, fresh);
    };
    #pragma unroll
    for (int e = 0; e < NV; e++) kr[e] = vr[e] = make_uint2(0u, 0u);
    load(false);
    pdl_wait_then_release();
    load(true);
    for (int d = tid; d < head_dim; d += blockDim.x) qs[d] = q[d];
    if (VS) cp_wait<0>();
    __syncthreads();
    float s = 0.f;
    #pragma unroll
    for (int e = 0; e < NV; e++) {
        if (e < span4) {
            float4 q4 = ((const float4*)qs)[e * 4 + quarter], k4 = kv_float4(kr[e]);
            s += k4.x * q4.x + k4.y * q4.y + k4.z * q4.z + k4.w * q4.w;
        }
    }
    s += __shfl_xor_sync(0xffffffffu, s, 1);
    s += __shfl_xor_sync(0xffffffffu, s, 2);
    if (quarter == 0) sc[j] = j < cnt && t0 + j >= lo ? s * scale : -__int_as_float(0x7f800000);
    __syncthreads();
    // Every warp finds the chunk's max and sum of exps itself (positions lane, lane + 32).
    float a0 = sc[lane], a1 = sc[lane + 32];
    float m = warp_max(fmaxf(a0, a1));
    float e0 = expf(a0 - m), e1 = expf(a1 - m);
    float sum = warp_sum(e0 + e1);
    __syncthreads();
    if (tid < 32) {
        sc[lane] = e0;
        sc[lane + 32] = e1;
    }
    __syncthreads();
    float4 a = zero;
    #pragma unroll
    for (int e = 0; e < NV; e++) {
        int jj = g + e * groups;
        if (g < groups && jj < cnt) {
            float p = sc[jj];
            float4 v = VS ? kv_load4(vs + (jj * v4 + c4) * 4) : kv_float4(vr[e]);
            a.x += p * v.x;
            a.y += p * v.y;
            a.z += p * v.z;
            a.w += p * v.w;
        }
    }
    if (g < groups) ((float4*)acc)[g * v4 + c4] = a;
    __syncthreads();
    float vsum = 0.f;
    if (tid < head_dim)
        for (int k = 0; k < groups; k++) vsum += acc[k * head_dim + tid];
    int used = att_chunks(n);
    if (used == 1) {
        if (tid < head_dim) emit(vsum / sum);
        return;
    }
    float* pp = part + ((long)h * splits + c) * (head_dim + 2);
    if (tid < head_dim) pp[tid] = vsum;
    if (tid == 0) {
        pp[head_dim] = m;
        pp[head_dim + 1] = sum;
    }
}

// q, out (rows, n_head * head_dim); head_dim <= HD; oimg: null, or (one row) the output's
// int8 image (written here where the context is one chunk, else by attention_merge);
// window (attention_window_h* only, the others take none): the positions a query sees on a
// sliding-window layer (0: all; such a layer never takes the grouped paths, and its chunks
// wholly before the window exit at once). Grid (n_head, splits, rows), 256 threads.
// Blocks a SM the register allocation must leave room for: 3 where V goes through shared
// memory (67 registers and ~22 KB a block at head 128), else no bound. 4 (64 registers) lost
// 2-4 % on llama-8b (NOTES.md, session 26).
#define ATT_MIN_BLOCKS(HD) (att_v_shared(HD) ? 3 : 1)
#define ATTENTION(NAME, HD, WINDOWED)                                                                                 \
    extern "C" __global__ void __launch_bounds__(256, ATT_MIN_BLOCKS(HD)) NAME##HD(const float* q, const kv_t* kc, const kv_t* vc,    \
            float* part, float* out, unsigned char* oimg, int n_head, int n_head_kv, int head_dim, const int* pos,           \
            float scale, int splits, int group_from, int window) {                                                      \
        TRACE_BLOCK(3);                                                                                               \
        attention_split<HD, WINDOWED>(q, kc, vc, part, out, oimg, n_head, n_head_kv, head_dim, pos, scale, splits, group_from, window); \
    }
ATTENTION(attention_h, 64, false) ATTENTION(attention_h, 128, false) ATTENTION(attention_h, 256, false)
ATTENTION(attention_window_h, 64, true) ATTENTION(attention_window_h, 128, true) ATTENTION(attention_window_h, 256, true)

// The split attention's partials merged: block (h, z) takes (row z, head h) in groups of
// `dims` threads (head_dim rounded up to a warp; blockDim.x / dims groups, host:
// `merge_threads`). Group g takes the batches of MERGE_BATCH chunks g, g + groups, ... (from
// the first chunk the row's window reaches, `att_first`; the split wrote none before it): its
// thread d loads each chunk's (max, sum of exps, V sum of dimension d), all of a batch's
// loads in flight at once, and rescales its running sums by each batch's max; then group 0
// combines the groups' sums (where more than one had chunks). So a context of up to groups x
// MERGE_BATCH chunks is one round of loads. Where the row's context is one chunk the split
// kernel wrote out itself and this does nothing. part (rows, n_head, splits, head_dim + 2);
// out and oimg as the split kernel's. span: the positions of a chunk (ATT_CHUNK for the
// split kernel's partials, a piece's keys for the tensor-core prompt attention's). It lets
// the next kernel start its blocks before waiting for the split kernel, so their weight
// loads overlap this one.
#define MERGE_BATCH 16
extern "C" __global__ void __launch_bounds__(256) attention_merge(const float* part, float* out, unsigned char* oimg, int n_head, int head_dim, const int* pos, int splits, int window, int span) {
    TRACE_BLOCK(4);
    __shared__ float gm[8], gt[8], go[256];
    int h = blockIdx.x, z = blockIdx.y, dims = (head_dim + 31) & ~31, groups = blockDim.x / dims;
    int d = threadIdx.x % dims, g = threadIdx.x / dims, dl = min(d, head_dim - 1);
    // *pos was written before the token's first kernel, so it is read before the wait and
    // the partials' loads follow the wait at once (read after it, it was a round trip of its own).
    int n = *pos + z + 1, used = (n + span - 1) / span, first = att_first(n, window) / span;
#ifdef CORTIQ_ATT_NO_MERGE
    used = 1;  // profiling (anatomy.rs): the partials written, never merged
#endif
#if __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
    asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
    TRACE_WAITED();
    if (used == 1) return;
    const float* p = part + ((long)z * n_head + h) * splits * (head_dim + 2);
    const float ninf = -__int_as_float(0x7f800000);
    float mm = ninf, total = 0.f, o = 0.f;
    for (int c0 = first + g * MERGE_BATCH; c0 < used; c0 += groups * MERGE_BATCH) {
        float m[MERGE_BATCH], sm[MERGE_BATCH], v[MERGE_BATCH];
        #pragma unroll
        for (int i = 0; i < MERGE_BATCH; i++) {
            const float* pc = p + (long)min(c0 + i, used - 1) * (head_dim + 2);
            m[i] = c0 + i < used ? __ldcg(pc + head_dim) : ninf;
            sm[i] = __ldcg(pc + head_dim + 1);
            v[i] = __ldcg(pc + dl);
        }
        float bm = mm;
        #pragma unroll
        for (int i = 0; i < MERGE_BATCH; i++) bm = fmaxf(bm, m[i]);
        float r = rescale_weight(mm, bm);
        total *= r;
        o *= r;
        #pragma unroll
        for (int i = 0; i < MERGE_BATCH; i++) {
            float w = c0 + i < used ? expf(m[i] - bm) : 0.f;
            total += w * sm[i];
            o += w * v[i];
        }
        mm = bm;
    }
    // Every thread of a group holds the same max and total. Where more than one group had
    // chunks, group 0 rescales each group's sums by the overall max (a group without chunks
    // holds max -inf and zero sums); else its own sums are the result, with no barrier.
    if (used - first > MERGE_BATCH) {
        if (d == 0) {
            gm[g] = mm;
            gt[g] = total;
        }
        go[threadIdx.x] = o;
        __syncthreads();
        if (g == 0) {
            float top = gm[0];
            for (int k = 1; k < groups; k++) top = fmaxf(top, gm[k]);
            total = 0.f;
            o = 0.f;
            for (int k = 0; k < groups; k++) {
                float w = rescale_weight(gm[k], top);
                total += w * gt[k];
                o += w * go[k * dims + d];
            }
        }
    }
    if (g > 0 || d >= head_dim) return;
    float res = o / total;
    out[((long)z * n_head + h) * head_dim + d] = res;
    if (oimg) store_unit(res, (h * head_dim + d) >> 5, n_head * head_dim, oimg);
}

// Causal attention of a prompt chunk's rows (queries at positions *pos + r, r < rows) over
// the KV mirror, FlashAttention-style: block (h, tile) takes query rows [32 tile, 32 tile +
// 32) of head h, ATT_ROWS_WARPS warps (ATT_ROWS_THREADS / 32, from the host) of ATT_ROWS_RPW
// rows each (a tile's chain of key chunks is its time, so a warp takes few of its rows); key
// and value positions stream through shared memory 32 at a time (lane j scores position j
// for the warp's rows) with an online softmax per row; lane l sums value dimensions l + 32 d
// (DPL = head_dim / 32). A NaN in a score reaches the row's output. Dynamic shared memory
// (host: `attention_rows_smem`): the scaled q tile and the K chunk at head_dim +
// ATT_ROWS_PAD floats a row (the pad, from the host, keeps a float4 phase of 8 lanes on
// distinct banks), then the V chunk.
#define ATT_ROWS_WARPS (ATT_ROWS_THREADS / 32)
#define ATT_ROWS_RPW (32 / ATT_ROWS_WARPS)
template <int DPL>
__device__ __forceinline__ void attention_rows(const float* q, const kv_t* kc, const kv_t* vc, float* out, int n_head, int n_head_kv, const int* pos, float scale, int rows, int window, float* sm) {
    constexpr int HD = 32 * DPL, QS = HD + ATT_ROWS_PAD, C4 = HD / 4;
    float* qs = sm;            // (32, QS)
    float* ks = qs + 32 * QS;  // (32, QS)
    float* vs = ks + 32 * QS;  // (32, HD)
    pdl_wait_then_release();
    int h = blockIdx.x, r0 = blockIdx.y * 32;
    int tid = threadIdx.x, lane = tid & 31, w8 = (tid >> 5) * ATT_ROWS_RPW;
    int p0 = *pos, kvh = h / (n_head / n_head_kv), kvd = n_head_kv * HD, qd = n_head * HD;
    for (int e = tid; e < 32 * C4; e += blockDim.x) {
        int r = e / C4, c = e % C4;
        float4 v = r0 + r < rows ? ((const float4*)(q + (long)(r0 + r) * qd + h * HD))[c] : make_float4(0.f, 0.f, 0.f, 0.f);
        ((float4*)(qs + r * QS))[c] = make_float4(v.x * scale, v.y * scale, v.z * scale, v.w * scale);
    }
    // The tile's last query position; rows past `rows` compute on zeros and are not written.
    int last = p0 + min(r0 + 32, rows) - 1;
    float m[ATT_ROWS_RPW], l[ATT_ROWS_RPW], acc[ATT_ROWS_RPW][DPL];
    #pragma unroll
    for (int i = 0; i < ATT_ROWS_RPW; i++) {
        m[i] = -__int_as_float(0x7f800000);
        l[i] = 0.f;
        #pragma unroll
        for (int d = 0; d < DPL; d++) acc[i][d] = 0.f;
    }
    // A sliding-window layer's tile starts at the chunk its first row's window reaches.
    for (int t0 = att_first(p0 + r0 + 1, window) & ~31; t0 <= last; t0 += 32) {
        // Every warp is done with the previous chunk (and the q tile is stored).
        __syncthreads();
        for (int e = tid; e < 32 * C4; e += blockDim.x) {
            int j = e / C4, c = e % C4;
            bool ok = t0 + j <= last;
            long off = (long)(t0 + j) * kvd + kvh * HD;
            float4 z = make_float4(0.f, 0.f, 0.f, 0.f);
            ((float4*)(ks + j * QS))[c] = ok ? kv_load4(kc + off + 4 * c) : z;
            ((float4*)(vs + j * HD))[c] = ok ? kv_load4(vc + off + 4 * c) : z;
        }
        __syncthreads();
        float s[ATT_ROWS_RPW];
        #pragma unroll
        for (int i = 0; i < ATT_ROWS_RPW; i++) s[i] = 0.f;
        const float4* kr = (const float4*)(ks + lane * QS);
        #pragma unroll 4
        for (int c = 0; c < C4; c++) {
            float4 k4 = kr[c];
            #pragma unroll
            for (int i = 0; i < ATT_ROWS_RPW; i++) {
                float4 q4 = ((const float4*)(qs + (w8 + i) * QS))[c];
                s[i] += k4.x * q4.x + k4.y * q4.y + k4.z * q4.z + k4.w * q4.w;
            }
        }
        int tp = t0 + lane;
        float p[ATT_ROWS_RPW];
        #pragma unroll
        for (int i = 0; i < ATT_ROWS_RPW; i++) {
            int row_pos = p0 + r0 + w8 + i;
            bool seen = tp <= row_pos && tp >= att_first(row_pos + 1, window);
            float mn = fmaxf(m[i], warp_max(seen ? s[i] : -__int_as_float(0x7f800000)));
            float corr = rescale_weight(m[i], mn);  // a window's row may see none of a chunk
            p[i] = seen ? expf(s[i] - mn) : 0.f;
            l[i] = l[i] * corr + p[i];
            #pragma unroll
            for (int d = 0; d < DPL; d++) acc[i][d] *= corr;
            m[i] = mn;
        }
        #pragma unroll 4
        for (int j = 0; j < 32; j++) {
            float vv[DPL];
            #pragma unroll
            for (int d = 0; d < DPL; d++) vv[d] = vs[j * HD + lane + 32 * d];
            #pragma unroll
            for (int i = 0; i < ATT_ROWS_RPW; i++) {
                float pj = __shfl_sync(0xffffffffu, p[i], j);
                #pragma unroll
                for (int d = 0; d < DPL; d++) acc[i][d] += pj * vv[d];
            }
        }
    }
    #pragma unroll
    for (int i = 0; i < ATT_ROWS_RPW; i++) {
        float total = warp_sum(l[i]);
        int r = r0 + w8 + i;
        if (r < rows) {
            #pragma unroll
            for (int d = 0; d < DPL; d++) out[(long)r * qd + h * HD + lane + 32 * d] = acc[i][d] / total;
        }
    }
}

// q, out (rows, n_head * head_dim); head_dim = 32 DPL; window as the split kernel's. Grid
// (n_head, rows / 32 rounded up), ATT_ROWS_THREADS threads.
#define ATTENTION_ROWS(DPL)                                                                                           \
    extern "C" __global__ void __launch_bounds__(ATT_ROWS_THREADS) attention_rows_d##DPL(const float* q, const kv_t* kc,                   \
            const kv_t* vc,  float* out, int n_head, int n_head_kv, const int* pos, float scale, int rows, int window) { \
        extern __shared__ int sm[];                                                                                   \
        attention_rows<DPL>(q, kc, vc, out, n_head, n_head_kv, pos, scale, rows, window, (float*)sm);                  \
    }
ATTENTION_ROWS(2) ATTENTION_ROWS(4) ATTENTION_ROWS(8)

// RoPE's pair j at position p: the sine and cosine of p * base^(-2j / rot), the CPU path's angle.
__device__ __forceinline__ void rope_rotation(int p, int j, float base, int rot, float& sn, float& cs) {
    sincosf((float)p * powf(base, -2.f * (float)j / (float)rot), &sn, &cs);
}

// Pair j's two dimensions of a head: rotary pairs first (neox: j and j + rot / 2, else 2j and
// 2j + 1), then the unrotated tail's pairs in order.
__device__ __forceinline__ void rope_dims(int j, int rot, int neox, int& a, int& b) {
    int half = rot >> 1;
    if (j < half) {
        a = neox ? j : 2 * j;
        b = neox ? j + half : 2 * j + 1;
    } else {
        a = rot + 2 * (j - half);
        b = a + 1;
    }
}

// The q, k and v rows of one launch in rotary pairs: pair j of a head (q heads, then k
// heads, then v heads) holds dimensions (a, b) = rotary pair j (neox: j, j + rot/2; else
// 2j, 2j + 1) for j < rot/2, then the unrotated dimensions rot + 2 (j - rot/2) + (0, 1).
// finish rotates q and k pairs by pos * base^(-2j/rot) (rope_store's formula before) and
// writes q, and k and v straight into the KV mirror row pos. A launch takes the rows from
// 2 * first_pair on (`qkv_parts`: all of them, or Q and K apart from V where V's codec kind
// differs).
struct RopeQkvMap {
    static constexpr int UNIT = 0;
    static constexpr bool EARLY = true;  // begin reads no memory
    static constexpr bool RELEASE_FIRST = true;  // the next kernel launches before the wait
    const unsigned char *wq, *wk, *wv;
    int aq, ak, av;
    float* q;
    kv_t *kc, *vc;
    int n_head, n_head_kv, head_dim, rot, neox, pos;  // pos: activation row 0's position
    float base;
    int first_pair = 0;
    int ahead_i0 = -1;           // the pair `begin` named: activation row 0's rotation below
    float ahead_sn, ahead_cs;
    // Matrix (0 q, 1 k, 2 v), head and pair of the launch's pair `pair`; the pair's dimensions.
    __device__ void locate(int pair, int& which, int& h, int& j, int& a, int& b) const {
        int hp = head_dim >> 1, qp = n_head * hp, kp = n_head_kv * hp;
        pair += first_pair;
        which = pair < qp ? 0 : (pair < qp + kp ? 1 : 2);
        pair -= which == 0 ? 0 : (which == 1 ? qp : qp + kp);
        h = pair / hp;
        j = pair % hp;
        rope_dims(j, rot, neox, a, b);
    }
    __device__ Row row(int i) const {
        int which, h, j, a, b;
        locate(i >> 1, which, h, j, a, b);
        long r = (long)h * head_dim + ((i & 1) ? b : a);
        return which == 0 ? Row{wq, aq, r} : (which == 1 ? Row{wk, ak, r} : Row{wv, av, r});
    }
    // Rotary pair j's angle at position p, as sine and cosine.
    __device__ void rotation(int p, int j, float& sn, float& cs) const {
        rope_rotation(p, j, base, rot, sn, cs);
    }
    // The rotation of pair i0 / 2 at activation row 0, so its finish does not compute it
    // after the dot products (a chain of ~150 dependent instructions in the SASS).
    __device__ void begin(int i0, int) {
        int which, h, j, a, b;
        locate(i0 >> 1, which, h, j, a, b);
        rotation(pos, j, ahead_sn, ahead_cs);
        ahead_i0 = i0;
    }
    // Activation row r is position pos + r; its q goes to row r of q (rows, n_head * head_dim).
    __device__ void finish(int r, int i0, int total, const float* s) const {
        int which, h, j, a, b;
        locate(i0 >> 1, which, h, j, a, b);
        int p = pos + r;
        float y0 = s[0], y1 = s[1];
        if (which < 2 && j < (rot >> 1)) {
            float sn = ahead_sn, cs = ahead_cs;
            if (r != 0 || i0 != ahead_i0) rotation(p, j, sn, cs);
            float r0 = y0 * cs - y1 * sn, r1 = y0 * sn + y1 * cs;
            y0 = r0;
            y1 = r1;
        }
        if (which == 0) {
            float* dst = q + ((long)r * n_head + h) * head_dim;
            dst[a] = y0;
            dst[b] = y1;
        } else {
            kv_t* dst = (which == 1 ? kc : vc) + (long)p * n_head_kv * head_dim + h * head_dim;
            dst[a] = f2h(y0);
            dst[b] = f2h(y1);
        }
    }
    __device__ void flush() {}
};

// Q, K and V projections of x, RMS-normed with nw, with RoPE at *pos and the KV-mirror
// append fused (one codec kind K; rows in rotary pairs, so R = 2): `count` rows from row
// `first` (even) of the three matrices' rows (`RopeQkvMap`). Dynamic shared memory: the
// staged x, then the weight ring (host: `row_smem`).
#define QKV_ROPE(K)                                                                                                   \
    extern "C" __global__ void __launch_bounds__(ROW_THREADS) qkv_rope_k##K##_r2(const unsigned char* wq, const unsigned char* wk, \
            const unsigned char* wv, int aq, int ak, int av, const float* x, const float* nw, float eps, float* q,       \
            kv_t* kc, kv_t* vc, int n_head, int n_head_kv, int head_dim, int rot, int neox, float base, const int* pos,   \
            int cols, int first, int count) {                                                                           \
        extern __shared__ int sm[];                                                                                   \
        TRACE_BLOCK(2);                                                                                               \
        RopeQkvMap m{wq, wk, wv, aq, ak, av, q, kc, vc, n_head, n_head_kv, head_dim, rot, neox, *pos, base, first >> 1}; \
        run_rows<K, 2, 1>(m, count, cols, x, 1, 1, nw, eps, sm);                                                      \
    }
QKV_ROPE(0) QKV_ROPE(1) QKV_ROPE(2) QKV_ROPE(3) QKV_ROPE(4) QKV_ROPE(5) QKV_ROPE(6) QKV_ROPE(7) QKV_ROPE(8)

// The same of x plus the pending part xa (`pending_value`: the token graph with the fused FFN).
#define QKV_ROPE_PEND(K)                                                                                              \
    extern "C" __global__ void __launch_bounds__(ROW_THREADS) qkv_rope_pend_k##K##_r2(const unsigned char* wq, const unsigned char* wk, \
            const unsigned char* wv, int aq, int ak, int av, const float* x, const long long* xa, const float* nw,     \
            float eps, float* q, kv_t* kc, kv_t* vc, int n_head, int n_head_kv, int head_dim, int rot, int neox,       \
            float base, const int* pos, int cols, int first, int count) {                                             \
        extern __shared__ int sm[];                                                                                   \
        TRACE_BLOCK(2);                                                                                               \
        RopeQkvMap m{wq, wk, wv, aq, ak, av, q, kc, vc, n_head, n_head_kv, head_dim, rot, neox, *pos, base, first >> 1}; \
        run_rows<K, 2, 1, X_PENDING>(m, count, cols, x, 1, 1, nw, eps, sm, xa);                                       \
    }
QKV_ROPE_PEND(0) QKV_ROPE_PEND(1) QKV_ROPE_PEND(2) QKV_ROPE_PEND(3) QKV_ROPE_PEND(4) QKV_ROPE_PEND(5) QKV_ROPE_PEND(6) QKV_ROPE_PEND(7) QKV_ROPE_PEND(8)

// The same for `batch` prompt rows at positions *pos.. in tiles of nb <= MATMUL_TILE
// (blockIdx.y: tile): q (batch, n_head * head_dim). Dynamic shared memory: nb staged rows,
// then the weight ring (host: `tile_smem`).
#define QKV_ROPE_TILE(K)                                                                                              \
    extern "C" __global__ void __launch_bounds__(256) qkv_rope_tile_k##K##_r2(const unsigned char* wq, const unsigned char* wk, \
            const unsigned char* wv, int aq, int ak, int av, const float* x, const float* nw, float eps, float* q,       \
            kv_t* kc, kv_t* vc, int n_head, int n_head_kv, int head_dim, int rot, int neox, float base, const int* pos,   \
            int cols, int batch, int nb, int first, int count) {                                                        \
        extern __shared__ int sm[];                                                                                   \
        int b0 = blockIdx.y * nb;                                                                                     \
        RopeQkvMap m{wq, wk, wv, aq, ak, av, q + (long)b0 * n_head * head_dim, kc, vc, n_head, n_head_kv, head_dim, rot, neox, *pos + b0, base, first >> 1}; \
        run_rows<K, 2, MATMUL_TILE>(m, count, cols, x + (long)b0 * cols, min(nb, batch - b0), nb, nw, eps, sm);       \
    }
QKV_ROPE_TILE(0) QKV_ROPE_TILE(1) QKV_ROPE_TILE(2) QKV_ROPE_TILE(3) QKV_ROPE_TILE(4) QKV_ROPE_TILE(5) QKV_ROPE_TILE(6) QKV_ROPE_TILE(7) QKV_ROPE_TILE(8)

// The q, k and v rows of one launch (q's, then k's, then v's, from row `first` on) written
// as they come out to y (q_dim + 2 kv_dim): Gemma 3's token graph, whose head norms come
// between the projections and RoPE (gemma_norm_rope).
struct QkvRowsMap {
    static constexpr int UNIT = 0;
    static constexpr bool EARLY = true;  // begin reads no memory
    static constexpr bool RELEASE_FIRST = true;  // the next kernel launches before the wait
    const unsigned char *wq, *wk, *wv;
    int aq, ak, av;
    float* y;
    int qd, kvd, first;
    __device__ Row row(int i) const {
        i += first;
        return i < qd ? Row{wq, aq, i} : (i < qd + kvd ? Row{wk, ak, i - qd} : Row{wv, av, i - qd - kvd});
    }
    __device__ void begin(int, int) const {}
    __device__ void finish(int, int i0, int total, const float* s) const {
        #pragma unroll
        for (int r = 0; r < 2; r++)
            if (i0 + r < total) y[first + i0 + r] = s[r];
    }
    __device__ void flush() const {}
};

// y rows [first, first + count) of the Q, K and V projections of x RMS-normed with nw (one
// codec kind K; `QkvRowsMap`). Dynamic shared memory: the staged x, then the weight ring
// (host: `row_smem`).
#define QKV_ROWS(K)                                                                                                   \
    extern "C" __global__ void __launch_bounds__(ROW_THREADS) qkv_rows_k##K##_r2(const unsigned char* wq, const unsigned char* wk, \
            const unsigned char* wv, int aq, int ak, int av, const float* x, const float* nw, float eps, float* y,       \
            int qd, int kvd, int cols, int first, int count) {                                                          \
        extern __shared__ int sm[];                                                                                   \
        TRACE_BLOCK(2);                                                                                               \
        QkvRowsMap m{wq, wk, wv, aq, ak, av, y, qd, kvd, first};                                                      \
        run_rows<K, 2, 1>(m, count, cols, x, 1, 1, nw, eps, sm);                                                      \
    }
QKV_ROWS(0) QKV_ROWS(1) QKV_ROWS(2) QKV_ROWS(3) QKV_ROWS(4) QKV_ROWS(5) QKV_ROWS(6) QKV_ROWS(7) QKV_ROWS(8)

// Gemma 3's head norms, RoPE and KV-mirror append for rows at positions *pos + r (r =
// blockIdx.y; one for a decode token), from y (rows, q_dim + 2 kv_dim: the raw projections,
// `qkv_rows` or a prompt chunk's GEMM): block (b < n_head, r) takes q head b of row r,
// RMS-normed with qn (head_dim), rotated (RopeQkvMap's pairs and angles), times q_scale and
// rounded to f16 as the CPU path rounds its query, to q (rows, n_head * head_dim); block
// (n_head + h, r) takes k head h, normed with kn and rotated, to the mirror's K row; block
// (n_head + n_head_kv + h, r) copies v head h to its V row. head_dim <= 256 threads.
extern "C" __global__ void __launch_bounds__(256) gemma_norm_rope(const float* y, const float* qn, const float* kn, float eps, float* q, kv_t* kc, kv_t* vc, int n_head, int n_head_kv, int head_dim, int rot, int neox, float base, float q_scale, const int* pos) {
    __shared__ float hv[256];
    int b = blockIdx.x, r = blockIdx.y, t = threadIdx.x, p = *pos + r, kvd = n_head_kv * head_dim;
    y += (long)r * (n_head + 2 * n_head_kv) * head_dim;
    q += (long)r * n_head * head_dim;
    pdl_wait_then_release();
    float v = t < head_dim ? y[(long)b * head_dim + t] : 0.f;
    if (b >= n_head + n_head_kv) {
        if (t < head_dim) vc[(long)p * kvd + (b - n_head - n_head_kv) * head_dim + t] = f2h(v);
        return;
    }
    bool is_q = b < n_head;
    float scale = rsqrtf(block_sum(v * v) / head_dim + eps);
    if (t < head_dim) hv[t] = v * scale * (is_q ? qn : kn)[t];
    __syncthreads();
    if (t >= head_dim) return;
    float o = hv[t];
    int half = rot >> 1;
    if (t < rot) {
        // t's rotary pair j and its dimensions (a, b2); t is a or b2.
        int j = neox ? (t < half ? t : t - half) : t >> 1, a, b2;
        rope_dims(j, rot, neox, a, b2);
        float sn, cs;
        rope_rotation(p, j, base, rot, sn, cs);
        o = t == a ? hv[a] * cs - hv[b2] * sn : hv[a] * sn + hv[b2] * cs;
    }
    if (is_q) q[(long)b * head_dim + t] = round_f16(o * q_scale);
    else kc[(long)p * kvd + (b - n_head) * head_dim + t] = f2h(o);
}

// x (rows, cols) += RMS-norm(t) * nw row by row: Gemma 3's sandwich norm of a projection t
// (rows, cols) added into the residual stream. Block r (blockIdx.x) takes row r, 256 threads.
extern "C" __global__ void __launch_bounds__(256) add_normed(float* x, const float* t, const float* nw, float eps, int cols) {
    x += (long)blockIdx.x * cols;
    t += (long)blockIdx.x * cols;
    pdl_wait_then_release();
    float ss = 0.f;
    for (int i = threadIdx.x; i < cols; i += blockDim.x) ss += t[i] * t[i];
    float scale = rsqrtf(block_sum(ss) / cols + eps);
    for (int i = threadIdx.x; i < cols; i += blockDim.x) x[i] += t[i] * scale * nw[i];
}

// Gate and up rows interleaved (2i: gate row i, 2i + 1: up row i).
struct GluRows {
    const unsigned char *wg, *wu;
    int ag, au;
    static constexpr bool EARLY = true;
    static constexpr bool RELEASE_FIRST = true;  // the next kernel launches before the wait
    __device__ Row row(int i) const { return (i & 1) ? Row{wu, au, i >> 1} : Row{wg, ag, i >> 1}; }
    __device__ void begin(int, int) const {}  // nothing to load ahead of the dot products
};

// The gated FFN's hidden value of gate g and up u: silu(g) * u (GLU_SILU, llama) or
// tanh-GELU(g) * u (GLU_GELU_TANH, Gemma 3).
template <int ACT> __device__ __forceinline__ float glu_value(float g, float u) { return ACT == GLU_SILU ? silu_times(g, u) : gelu_tanh(g) * u; }

// GluRows with R even, so a warp group holds whole pairs and writes h[i] = act(gate_i . xn)
// * (up_i . xn).
template <int R, int ACT = GLU_SILU> struct GluMap : GluRows {
    static constexpr int UNIT = 0;
    float* h;  // (activation rows, total / 2)
    __device__ void finish(int r, int i0, int total, const float* s) const {
        float* hr = h + (long)r * (total >> 1);
        #pragma unroll
        for (int p = 0; p < R / 2; p++)
            if (i0 + 2 * p < total) hr[(i0 >> 1) + p] = glu_value<ACT>(s[2 * p], s[2 * p + 1]);
    }
    __device__ void flush() {}
};

// h (rows) = act(gate . xn) * (up . xn), xn = x RMS-normed with nw (one codec kind K; act:
// SiLU as gate_up_silu, tanh-GELU as gate_up_gelu_tanh). Dynamic shared memory: the staged
// x, then the weight ring (host: `row_smem`).
#define GATE_UP(NAME, ACT, K, R)                                                                                     \
    extern "C" __global__ void __launch_bounds__(ROW_THREADS) NAME##_k##K##_r##R(const unsigned char* wg,              \
            const unsigned char* wu, int ag, int au, const float* x, const float* nw, float eps, float* h, int rows,  \
            int cols) {                                                                                              \
        extern __shared__ int sm[];                                                                                  \
        TRACE_BLOCK(7);                                                                                              \
        GluMap<R, ACT> m{{wg, wu, ag, au}, h};                                                                       \
        run_rows<K, R, 1>(m, 2 * rows, cols, x, 1, 1, nw, eps, sm);                                                          \
    }
#define GATE_UP_R(K) GATE_UP(gate_up_silu, GLU_SILU, K, 2) GATE_UP(gate_up_silu, GLU_SILU, K, 4) GATE_UP(gate_up_gelu_tanh, GLU_GELU_TANH, K, 2) GATE_UP(gate_up_gelu_tanh, GLU_GELU_TANH, K, 4)
GATE_UP_R(0) GATE_UP_R(1) GATE_UP_R(2) GATE_UP_R(3) GATE_UP_R(4) GATE_UP_R(5) GATE_UP_R(6) GATE_UP_R(7) GATE_UP_R(8)

// GluRows whose blocks take whole units of 32 hidden values, each value kept in the block's
// unit buffer (`unit_values`) as its (gate, up) pair finishes, for unit_done.
template <int R> struct GluUnits : GluRows {
    static constexpr int UNIT = 64;  // 32 (gate, up) row pairs
    __device__ void finish(int, int i0, int, const float* s) const {
        float* v = unit_values(i0 >> 6);
        #pragma unroll
        for (int p = 0; p < R / 2; p++) v[((i0 >> 1) + p) & 31] = silu_times(s[2 * p], s[2 * p + 1]);
    }
    __device__ void flush() const {}
};

// GluUnits whose hidden values are written, a unit of 32 at a time, as the int8
// image of h (the down projection's input in the token graph's int8 chain) instead.
template <int R> struct GluUnitMap : GluUnits<R> {
    unsigned char* img;  // image_bytes(total / 2)
    __device__ void unit_done(int u, int total) const {
        __syncthreads();
        if (threadIdx.x < 32) {
            float h = unit_values(u)[threadIdx.x];
            store_unit(h, u, total >> 1, img);
        }
    }
};

// h_img = the int8 image of silu(gate . xn) * (up . xn) (rows values, a multiple of 32),
// xn = x RMS-normed with nw (the token graph's int8 chain; quantized codec kinds only).
#define GATE_UP_Q8(K, R)                                                                                             \
    extern "C" __global__ void __launch_bounds__(ROW_THREADS) gate_up_q8_k##K##_r##R(const unsigned char* wg,                \
            const unsigned char* wu, int ag, int au, const float* x, const float* nw, float eps, unsigned char* h_img, int rows, \
            int cols) {                                                                                              \
        extern __shared__ int sm[];                                                                                  \
        TRACE_BLOCK(7);                                                                                              \
        GluUnitMap<R> m{{{wg, wu, ag, au}}, h_img};                                                                      \
        run_rows<K, R, 1>(m, 2 * rows, cols, x, 1, 1, nw, eps, sm);                                                  \
    }
GATE_UP_Q8(0, 4) GATE_UP_Q8(1, 4) GATE_UP_Q8(2, 4) GATE_UP_Q8(5, 4) GATE_UP_Q8(6, 4) GATE_UP_Q8(7, 4) GATE_UP_Q8(8, 4)

// GluUnits whose hidden values go, a unit of 32 at a time, into the block's own int8 image of
// its hidden units in shared memory (stage_x's layout of a row of `values` = NU x 32 values,
// unit u at u - u0), the down projection's input after them (`ffn_fused`).
template <int R> struct GluLocalMap : GluUnits<R> {
    static constexpr bool RELEASE_FIRST = false;  // releasing first measured even on smollm2 (NOTES.md)
    unsigned char* himg;
    int u0, values;
    __device__ void unit_done(int u, int) const {
        __syncthreads();
        if (threadIdx.x < 32) store_unit(unit_values(u)[threadIdx.x], u - u0, values, himg);
    }
};

// Units of the down projection a thread loads together (`down_columns`).
#define FFN_UNITS_AHEAD 8

// L2 prefetch of the down projection's columns a block of `ffn_fused` takes (hidden units u0
// .. u0 + NU - 1 over `rows` output rows; unit-major, so one run of payload words and one of
// scales), in 4 KB pieces over the block's threads: issued before the gate/up stream, so the
// down columns come from L2 after it.
template <int K, int NU> __device__ __forceinline__ void prefetch_down(const unsigned char* w, int a_off, int rows, int u0) {
#if __CUDA_ARCH__ >= 900 && !defined(CORTIQ_FFN_NO_PREFETCH)
    constexpr long PAY = K == 2 ? 32 : 16, SC = K == 1 ? 4 : 2, PIECE = 4096;
    const unsigned char* pay = w + (long)u0 * rows * PAY;
    const unsigned char* sc = w + 4L * a_off + (long)u0 * rows * SC;  // rows % 32 == 0: 64-byte aligned
    long pay_bytes = (long)NU * rows * PAY, sc_bytes = (long)NU * rows * SC;
    long pay_pieces = (pay_bytes + PIECE - 1) / PIECE, pieces = pay_pieces + (sc_bytes + PIECE - 1) / PIECE;
    for (long q = threadIdx.x; q < pieces; q += blockDim.x) {
        bool in_pay = q < pay_pieces;
        long at = (in_pay ? q : q - pay_pieces) * PIECE;
        unsigned n = (unsigned)min(PIECE, (in_pay ? pay_bytes : sc_bytes) - at);
        asm volatile("cp.async.bulk.prefetch.L2.global [%0], %1;" ::"l"((in_pay ? pay : sc) + at), "r"(n) : "memory");
    }
#endif
}

// The down projection's columns of a block's hidden units: output row i (< rows) gains
// sum_j W[i, unit u0 + j] . h_j (j < NU), added into the pending part xa (`add_pending`). W
// is unit-major planar (unit (i, u) at u * rows + i: `planar::repack_unit_major`), so a warp's
// loads of one unit over 32 rows are contiguous; h is the block's int8 image (himg, NU x 32
// values). Each thread takes rows threadIdx.x + k * blockDim.x, FFN_UNITS_AHEAD units loaded
// at once.
template <int K, int NU> __device__ void down_columns(const unsigned char* w, int a_off, int rows, int u0, const int* himg, long long* xa) {
    constexpr int WORDS = K == 2 ? 2 : 1, AHEAD = FFN_UNITS_AHEAD / NU > 0 ? FFN_UNITS_AHEAD / NU : 1;
    const uint4* pay = (const uint4*)w;
    const unsigned int* sc = (const unsigned int*)w + a_off;
    for (int i0 = threadIdx.x; i0 < rows; i0 += AHEAD * blockDim.x) {
        Unit u[AHEAD][NU];
        #pragma unroll
        for (int k = 0; k < AHEAD; k++) {
            int i = min(i0 + k * (int)blockDim.x, rows - 1);
            #pragma unroll
            for (int j = 0; j < NU; j++) {
                long iu = (long)(u0 + j) * rows + i;
                u[k][j].a = __ldg(pay + WORDS * iu);
                if (WORDS == 2) u[k][j].b = __ldg(pay + WORDS * iu + 1);
                unsigned int s = __ldg(K == 1 ? sc + iu : sc + (iu >> 1));
                u[k][j].s = K == 1 ? s : (s >> ((iu & 1) << 4)) & 0xffff;
            }
        }
        #pragma unroll
        for (int k = 0; k < AHEAD; k++) {
            int i = i0 + k * (int)blockDim.x;
            if (i < rows) {
                float acc = 0.f;
                #pragma unroll
                for (int j = 0; j < NU; j++) acc += unit_dot<K>(u[k][j], himg, NU * 32, j);
#ifdef CORTIQ_FFN_NO_REDUCE
                if (acc == 1.2345e-30f) add_pending(xa, i, rows, acc);  // profiling (anatomy.rs): no adds
#else
                add_pending(xa, i, rows, acc);
#endif
            }
        }
    }
}

// The FFN in one launch (token graph, quantized codec kinds): block b takes hidden units
// u0 = NU b .. u0 + NU - 1 (32 values each) of h = silu(gate . xn) * (up . xn), xn = x
// RMS-normed with nw, as gate_up_q8 does but into its own shared int8 image, then adds those
// units' share of the down projection (wd unit-major, `down_columns`) into the pending part
// xa: no kernel boundary between gate/up and down, the down columns prefetched into L2 while
// gate/up streams. rows: hidden values (n_ff), cols: x's (n_embd). Dynamic shared memory:
// the staged x and the weight ring (host: `row_smem`), then the image (`image_bytes(NU x 32)`).
#define FFN_FUSED(K, NU)                                                                                             \
    extern "C" __global__ void __launch_bounds__(ROW_THREADS) ffn_fused_k##K##_n##NU(const unsigned char* wg,         \
            const unsigned char* wu, int ag, int au, const float* x, const float* nw, float eps,                     \
            const unsigned char* wd, int ad, long long* xa, int rows, int cols) {                                    \
        extern __shared__ int sm[];                                                                                  \
        TRACE_BLOCK(9);                                                                                              \
        int u0 = blockIdx.x * NU;                                                                                    \
        prefetch_down<K, NU>(wd, ad, cols, u0);                                                                      \
        unsigned char* himg = (unsigned char*)sm + staged_stride<K>(cols) + Ring<K>::BYTES;                          \
        GluLocalMap<4> m{{{wg, wu, ag, au}}, himg, u0, NU * 32};                                                       \
        run_rows<K, 4, 1>(m, 2 * rows, cols, x, 1, 1, nw, eps, sm);                                                  \
        __syncthreads();                                                                                             \
        down_columns<K, NU>(wd, ad, cols, u0, (const int*)himg, xa);                                                 \
    }
#define FFN_FUSED_N(K) FFN_FUSED(K, 1) FFN_FUSED(K, 2) FFN_FUSED(K, 4)
FFN_FUSED_N(0) FFN_FUSED_N(1) FFN_FUSED_N(2)

// The same for `batch` prompt rows in tiles of nb <= MATMUL_TILE (blockIdx.y: tile):
// h (batch, rows). Dynamic shared memory: nb staged rows, then the weight ring.
#define GATE_UP_TILE(K)                                                                                              \
    extern "C" __global__ void __launch_bounds__(256) gate_up_silu_tile_k##K##_r2(const unsigned char* wg,                \
            const unsigned char* wu, int ag, int au, const float* x, const float* nw, float eps, float* h, int rows,  \
            int cols, int batch, int nb) {                                                                           \
        extern __shared__ int sm[];                                                                                  \
        int b0 = blockIdx.y * nb;                                                                                    \
        GluMap<2> m{{wg, wu, ag, au}, h + (long)b0 * rows};                                                            \
        run_rows<K, 2, MATMUL_TILE>(m, 2 * rows, cols, x + (long)b0 * cols, min(nb, batch - b0), nb, nw, eps, sm);   \
    }
GATE_UP_TILE(0) GATE_UP_TILE(1) GATE_UP_TILE(2) GATE_UP_TILE(3) GATE_UP_TILE(4) GATE_UP_TILE(5) GATE_UP_TILE(6) GATE_UP_TILE(7) GATE_UP_TILE(8)

// Whether v may be an f16 matrix-unit operand: |v| <= 65504 and a number (SPEC section 6's
// f16 operand guard; where a kernel finds one that is not, it sets its `bad` word and the
// host reruns the prompt chunk on the int8 / f32 kernels).
__device__ __forceinline__ bool in_f16(float v) { return fabsf(v) <= 65504.f; }

// f2h for an f16 matrix-unit operand, setting *bad where v fails the guard.
__device__ __forceinline__ unsigned short f2h_guarded(float v, unsigned int* bad) {
    if (!in_f16(v)) *bad = 1u;
    return f2h(v);
}

// out (rows, cols) f16 = a planar Q4_0 / Q4_1 / Q8_0 / F16 / q6 / q4k / q5k / q51 matrix (kind 0 / 1 / 2 / 3 / 5 / 6 /
// 7 / 8) decoded, each value rounded to f16 (guarded: `bad`; F16's values copied, its
// infinities and NaNs flagged): the weight of a prompt chunk's cuBLAS GEMM (host:
// `gpu/cuda/blas.rs`). Thread t decodes values 8 (t % 4) .. + 8 of unit t / 4 (unit u =
// row * cols / 32 + column / 32).
extern "C" __global__ void dequant_f16(const unsigned char* w, int kind, int a_off, unsigned short* out, int rows, int cols, unsigned int* bad) {
    long t = (long)blockIdx.x * blockDim.x + threadIdx.x;
    long iu = t >> 2;
    int g = (int)(t & 3);
    if (iu >= (long)rows * (cols >> 5)) return;
    const unsigned int* a = (const unsigned int*)w + a_off;
    float v[8];
    if (kind == 2) {
        float d = h2f(((const unsigned short*)a)[iu]);
        uint2 q = *(const uint2*)(w + iu * 32 + 8 * g);
        unsigned int qs[2] = {q.x, q.y};
        #pragma unroll
        for (int k = 0; k < 8; k++) v[k] = d * (float)(signed char)((qs[k >> 2] >> (8 * (k & 3))) & 0xff);
    } else if (kind == 3) {
        // F16's planar layout is the row-major matrix: values 8 (t % 4) .. of unit t / 4 are
        // halves iu * 32 + 8 g ...
        uint4 q = *(const uint4*)(w + iu * 64 + 16 * g);
        unsigned int qs[4] = {q.x, q.y, q.z, q.w};
        #pragma unroll
        for (int k = 0; k < 8; k++) v[k] = h2f((qs[k >> 1] >> (16 * (k & 1))) & 0xffff);
    } else {
        uint2 q = *(const uint2*)(w + iu * 16 + 8 * (g & 1));
        unsigned int qs[2] = {q.x, q.y};
        float d, m = 0.f;
        unsigned int high = 0;  // q6: the record's high-bit word of this half; q5k, q51: the unit's
        if (kind == 0) {
            d = h2f(((const unsigned short*)a)[iu]);
        } else if (kind == KIND_Q6) {
            // The unit's d times the int8 scale of the 16-value half these 8 values are in.
            unsigned int s = a[3 * iu + 2];
            d = h2f(s & 0xffff) * (float)(signed char)(s >> (16 + 8 * (g >> 1)));
            high = a[3 * iu + (g >> 1)];
        } else if (kind == KIND_Q4K || kind == KIND_Q5K) {
            float2 s = q4k_unit_scale(a, iu);
            if (kind == KIND_Q5K) high = ((const unsigned int*)w)[q5k_high_off(a_off) + iu];
            d = s.x;
            m = s.y;
        } else {
            d = h2f(a[iu] & 0xffff);
            m = h2f(a[iu] >> 16);
            if (kind == KIND_Q51) high = ((const unsigned int*)w)[q51_high_off(a_off) + iu];
        }
        #pragma unroll
        for (int k = 0; k < 8; k++) {
            unsigned int byte = (qs[k >> 2] >> (8 * (k & 3))) & 0xff;
            int n = g < 2 ? (byte & 15) : (byte >> 4);
            int v32 = 8 * g + k;  // the value's place in its unit
            if (kind == KIND_Q5K || kind == KIND_Q51) n |= (int)((high >> (8 * (v32 & 3) + (v32 >> 2))) & 1) << 4;
            if (kind == KIND_Q6) v[k] = d * (float)((n | q6_high2(high, v32 & 15) << 4) - 32);
            else v[k] = kind == 0 ? d * ((float)n - 8.f) : d * (float)n + m;
        }
    }
    unsigned int p[4];
    bool ok = true;
    #pragma unroll
    for (int k = 0; k < 4; k++) {
        ok &= in_f16(v[2 * k]) & in_f16(v[2 * k + 1]);
        p[k] = f2h(v[2 * k]) | ((unsigned int)f2h(v[2 * k + 1]) << 16);
    }
    if (!ok) *bad = 1u;
    *(uint4*)(out + iu * 32 + 8 * g) = make_uint4(p[0], p[1], p[2], p[3]);
}

// out (n) f16 = x (n) f32, rounded to nearest even (guarded: `bad`).
extern "C" __global__ void to_f16(const float* x, unsigned short* out, long n, unsigned int* bad) {
    long i = (long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = f2h_guarded(x[i], bad);
}

// The cuBLAS prompt path's glue (host: `queue_prefill` in graph.rs, `gpu/cuda/blas.rs`).

// out (rows, cols) f16 = row blockIdx.x of x RMS-normed with nw (the rule of stage_x: the
// mean square over cols, plus eps; guarded: `bad`). 256 threads.
extern "C" __global__ void __launch_bounds__(256) rms_norm_f16(const float* x, const float* nw, float eps, int cols, unsigned short* out, unsigned int* bad) {
    long b = blockIdx.x;
    const float* xr = x + b * cols;
    float ss = 0.f;
    for (int i = threadIdx.x; i < cols; i += blockDim.x) ss += xr[i] * xr[i];
    float scale = rsqrtf(block_sum(ss) / cols + eps);
    for (int i = threadIdx.x; i < cols; i += blockDim.x) out[b * cols + i] = f2h_guarded(xr[i] * scale * nw[i], bad);
}

// y (n, (n_head + 2 n_head_kv) head_dim): Q, K and V of n prompt rows at positions *pos..,
// side by side per row; RoPE on q and k, q to q (n, n_head * head_dim), k and v appended to
// the KV mirror (RopeQkvMap's pairs and rule). Grid (pairs / 256, n).
extern "C" __global__ void __launch_bounds__(256) rope_append_rows(const float* y, float* q, kv_t* kc, kv_t* vc, int n_head, int n_head_kv, int head_dim, int rot, int neox, float base, const int* pos) {
    int width = (n_head + 2 * n_head_kv) * head_dim;
    int pair = blockIdx.x * blockDim.x + threadIdx.x, r = blockIdx.y;
    if (pair >= (width >> 1)) return;
    RopeQkvMap m{nullptr, nullptr, nullptr, 0, 0, 0, q, kc, vc, n_head, n_head_kv, head_dim, rot, neox, *pos, base};
    int which, h, j, a, b;
    m.locate(pair, which, h, j, a, b);
    const float* yr = y + (long)r * width + (which == 0 ? 0 : (which == 1 ? n_head : n_head + n_head_kv) * head_dim) + h * head_dim;
    float s[2] = {yr[a], yr[b]};
    m.finish(r, 2 * pair, width, s);
}

// h (n, ff) f16 = act(gate) * up, gate and up side by side in gu (n, 2 ff); act: GLU_SILU
// or GLU_GELU_TANH; guarded: `bad`. Grid (ff / 256, n).
extern "C" __global__ void __launch_bounds__(256) act_mul_f16(const float* gu, int ff, unsigned short* h, unsigned int* bad, int act) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    long r = blockIdx.y;
    if (i >= ff) return;
    float g = gu[r * 2 * ff + i], u = gu[r * 2 * ff + ff + i];
    h[r * ff + i] = f2h_guarded(act == GLU_SILU ? glu_value<GLU_SILU>(g, u) : glu_value<GLU_GELU_TANH>(g, u), bad);
}
