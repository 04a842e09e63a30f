// Kernels of the CUDA whole-token decode graph (compiled in one module after matvec.cu,
// whose helpers they use). One token per launch sequence; shapes come in as arguments;
// token and position are read from device memory so a captured graph can be replayed.

__device__ __forceinline__ unsigned short g_rd16(const unsigned char* p) {
    return (unsigned short)(p[0] | (p[1] << 8));
}

// out (cols) = row `row` of a packed matrix, decoded. kind: 0 q4_0, 1 q4_1, 2 q8_0, 3 f16, 4 f32.
extern "C" __global__ void embed_row(const unsigned char* w, const int* token, float* out, int cols, int kind) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= cols) return;
    long row = *token;
    int blk = i >> 5, j = i & 31;
    float v;
    if (kind == 0) {
        const unsigned char* b = w + (row * (cols >> 5) + blk) * 18;
        unsigned char q = b[2 + (j & 15)];
        int n = j < 16 ? (q & 15) : (q >> 4);
        v = h2f(g_rd16(b)) * (float)(n - 8);
    } else if (kind == 1) {
        const unsigned char* b = w + (row * (cols >> 5) + blk) * 20;
        unsigned char q = b[4 + (j & 15)];
        int n = j < 16 ? (q & 15) : (q >> 4);
        v = h2f(g_rd16(b)) * (float)n + h2f(g_rd16(b + 2));
    } else if (kind == 2) {
        const unsigned char* b = w + (row * (cols >> 5) + blk) * 34;
        v = h2f(g_rd16(b)) * (float)(signed char)b[2 + j];
    } else if (kind == 3) {
        v = h2f(((const unsigned short*)w)[row * cols + i]);
    } else {
        v = ((const float*)w)[row * cols + i];
    }
    out[i] = v;
}

// Sum of every thread's v over the block (blockDim a multiple of 32, up to 1024), returned
// to all threads. Call once per kernel (its shared buffer is not reset).
__device__ float block_sum(float v) {
    __shared__ float part[32];
    for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffffu, v, o);
    if ((threadIdx.x & 31) == 0) part[threadIdx.x >> 5] = v;
    __syncthreads();
    if (threadIdx.x < 32) {
        v = threadIdx.x < (blockDim.x >> 5) ? part[threadIdx.x] : 0.f;
        for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffffu, v, o);
        if (threadIdx.x == 0) part[0] = v;
    }
    __syncthreads();
    return part[0];
}

// out = x / rms(x) * w, one block.
extern "C" __global__ void rmsnorm(const float* x, const float* w, float* out, int n, float eps) {
    float s = 0.f;
    for (int i = threadIdx.x; i < n; i += blockDim.x) s += x[i] * x[i];
    float scale = rsqrtf(block_sum(s) / n + eps);
    for (int i = threadIdx.x; i < n; i += blockDim.x) out[i] = x[i] * scale * w[i];
}

// Split attention (flash-decoding): block (h, c) takes positions [64 c, 64 c + 64) of
// head h and writes its partial (max, sum of exps, exp-weighted V sum) to `part`
// (n_head, splits, head_dim + 2); blocks past *pos exit at once, so the grid can be sized
// for the whole context and captured once. head_dim <= 256.
#define ATT_CHUNK 64
extern "C" __global__ void attn_split(const float* q, const float* kc, const float* vc, float* part, int n_head, int n_head_kv, int head_dim, const int* pos, float scale, int splits) {
    __shared__ float sc[ATT_CHUNK];
    __shared__ float acc4[4][256];
    int h = blockIdx.x, c = blockIdx.y, warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    int n = *pos + 1, t0 = c * ATT_CHUNK;
    if (t0 >= n) return;
    int cnt = min(ATT_CHUNK, n - t0);
    int kvh = h / (n_head / n_head_kv), kvd = n_head_kv * head_dim;
    const float* qh = q + h * head_dim;
    for (int j = warp; j < cnt; j += 8) {
        const float* kr = kc + (long)(t0 + j) * kvd + kvh * head_dim;
        float s = 0.f;
        for (int d = lane; d < head_dim; d += 32) s += qh[d] * kr[d];
        for (int o = 16; o > 0; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);
        if (lane == 0) sc[j] = s * scale;
    }
    __syncthreads();
    float m = -3.4e38f;
    for (int j = 0; j < cnt; j++) m = fmaxf(m, sc[j]);
    __syncthreads();
    if (threadIdx.x < cnt) sc[threadIdx.x] = expf(sc[threadIdx.x] - m);
    __syncthreads();
    // Thread (g, d): positions j = g, g + 4, ...; dimension d.
    int g = threadIdx.x >> 6, d = threadIdx.x & 63;
    for (int dd = d; dd < head_dim; dd += 64) {
        float a = 0.f;
        for (int j = g; j < cnt; j += 4) a += sc[j] * vc[(long)(t0 + j) * kvd + kvh * head_dim + dd];
        acc4[g][dd] = a;
    }
    __syncthreads();
    float* out = part + ((long)h * splits + c) * (head_dim + 2);
    for (int dd = threadIdx.x; dd < head_dim; dd += blockDim.x) out[dd] = acc4[0][dd] + acc4[1][dd] + acc4[2][dd] + acc4[3][dd];
    if (threadIdx.x == 0) {
        float s = 0.f;
        for (int j = 0; j < cnt; j++) s += sc[j];
        out[head_dim] = m;
        out[head_dim + 1] = s;
    }
}

// Combine the partials of the chunks that exist at *pos: one block per head.
extern "C" __global__ void attn_combine(const float* part, float* out, int head_dim, const int* pos, int splits) {
    int h = blockIdx.x;
    int used = (*pos + ATT_CHUNK) / ATT_CHUNK;
    const float* p = part + (long)h * splits * (head_dim + 2);
    float m = -3.4e38f;
    for (int c = 0; c < used; c++) m = fmaxf(m, p[c * (head_dim + 2) + head_dim]);
    float total = 0.f;
    for (int c = 0; c < used; c++) total += expf(p[c * (head_dim + 2) + head_dim] - m) * p[c * (head_dim + 2) + head_dim + 1];
    for (int d = threadIdx.x; d < head_dim; d += blockDim.x) {
        float a = 0.f;
        for (int c = 0; c < used; c++) a += expf(p[c * (head_dim + 2) + head_dim] - m) * p[c * (head_dim + 2) + d];
        out[h * head_dim + d] = a / total;
    }
}

// Q, K and V projections of one input in one launch: warps 0..rows0 compute q, the next
// rows1 k, the next rows2 v.
extern "C" __global__ void qkv(const unsigned char* wq, const unsigned char* wk, const unsigned char* wv, int kq, int kk, int kvk,
                               const float* x, float* q, float* k, float* v, int rows0, int rows1, int rows2, int cols) {
    int row = (blockIdx.x * blockDim.x + threadIdx.x) >> 5, lane = threadIdx.x & 31;
    const unsigned char* w; int kind; float* y;
    if (row < rows0) { w = wq; kind = kq; y = q; }
    else if (row < rows0 + rows1) { row -= rows0; w = wk; kind = kk; y = k; }
    else if (row < rows0 + rows1 + rows2) { row -= rows0 + rows1; w = wv; kind = kvk; y = v; }
    else return;
    float sum = warp_sum(lane_dot(kind, w, row, x, cols, lane));
    if (lane == 0) y[row] = sum;
}

// h = silu(gate . x) * (up . x) for every FFN row; each warp takes `rpw` (1 or 2) rows, so
// one activation load serves up to 4 weight rows (2 of gate, 2 of up).
extern "C" __global__ void gate_up_silu(const unsigned char* wg, const unsigned char* wu, int kg, int ku, const float* x, float* h, int rows, int cols, int rpw) {
    int warp = (blockIdx.x * blockDim.x + threadIdx.x) >> 5, lane = threadIdx.x & 31;
    long r0 = (long)warp * rpw;
    if (r0 >= rows) return;
    bool two = rpw == 2 && r0 + 1 < rows;
    float g0 = 0.f, g1 = 0.f, u0 = 0.f, u1 = 0.f;
    if (kg <= 2 && ku <= 2) {
        int nb = cols >> 5;
        long bg = (long)nb * block_bytes(kg), bu = (long)nb * block_bytes(ku);
        for (int i = lane; i < nb; i += 32) {
            float xs[32];
            load_x32(x + i * 32, xs);
            g0 += block_dot(kg, wg + r0 * bg, i, xs);
            u0 += block_dot(ku, wu + r0 * bu, i, xs);
            if (two) {
                g1 += block_dot(kg, wg + (r0 + 1) * bg, i, xs);
                u1 += block_dot(ku, wu + (r0 + 1) * bu, i, xs);
            }
        }
    } else {
        g0 = lane_dot(kg, wg, r0, x, cols, lane);
        u0 = lane_dot(ku, wu, r0, x, cols, lane);
        if (two) {
            g1 = lane_dot(kg, wg, r0 + 1, x, cols, lane);
            u1 = lane_dot(ku, wu, r0 + 1, x, cols, lane);
        }
    }
    g0 = warp_sum(g0); u0 = warp_sum(u0); g1 = warp_sum(g1); u1 = warp_sum(u1);
    if (lane == 0) {
        h[r0] = g0 / (1.f + expf(-g0)) * u0;
        if (two) h[r0 + 1] = g1 / (1.f + expf(-g1)) * u1;
    }
}

// RoPE on q (n_head heads) and k (n_head_kv heads) at *pos, then k and v appended to this
// layer's cache row *pos. One thread per rotary pair of q and k, plus one per v value.
extern "C" __global__ void rope_store(float* q, float* k, const float* v, float* kc, float* vc, int n_head, int n_head_kv, int head_dim, int rot, const int* pos, float base, int neox) {
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    int half = rot >> 1, kvd = n_head_kv * head_dim, p = *pos;
    int nq = n_head * half, nk = n_head_kv * half;
    if (t < nq + nk) {
        bool is_q = t < nq;
        int u = is_q ? t : t - nq;
        int h = u / half, i = u % half;
        float theta = (float)p * powf(base, -2.f * (float)i / (float)rot);
        float s, c;
        sincosf(theta, &s, &c);
        float* hv = (is_q ? q : k) + h * head_dim;
        int a = neox ? i : 2 * i, b = neox ? i + half : 2 * i + 1;
        float x0 = hv[a], x1 = hv[b];
        float y0 = x0 * c - x1 * s, y1 = x0 * s + x1 * c;
        hv[a] = y0;
        hv[b] = y1;
        if (!is_q) {
            kc[(long)p * kvd + h * head_dim + a] = y0;
            kc[(long)p * kvd + h * head_dim + b] = y1;
        }
    } else if (t < nq + nk + kvd) {
        int i = t - nq - nk;
        vc[(long)p * kvd + i] = v[i];
        // Dimensions past the rotary width are copied unrotated.
        int d = i % head_dim;
        if (d >= rot) kc[(long)p * kvd + i] = k[i];
    }
}

// x += y, then out = x / rms(x) * w (the residual add fused into the next norm); one block.
extern "C" __global__ void add_rmsnorm(float* x, const float* y, const float* w, float* out, int n, float eps) {
    float s = 0.f;
    for (int i = threadIdx.x; i < n; i += blockDim.x) {
        float v = x[i] + y[i];
        x[i] = v;
        s += v * v;
    }
    float scale = rsqrtf(block_sum(s) / n + eps);
    for (int i = threadIdx.x; i < n; i += blockDim.x) out[i] = x[i] * scale * w[i];
}
