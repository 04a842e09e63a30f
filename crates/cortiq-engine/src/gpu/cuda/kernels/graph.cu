// Kernels of the CUDA whole-token decode graph: everything between the weight matvecs.
// One token per launch sequence; shapes come in as arguments.

__device__ __forceinline__ float g_h2f(unsigned short h) {
    float f;
    asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h));
    return f;
}

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
        v = g_h2f(g_rd16(b)) * (float)(n - 8);
    } else if (kind == 1) {
        const unsigned char* b = w + (row * (cols >> 5) + blk) * 20;
        unsigned char q = b[4 + (j & 15)];
        int n = j < 16 ? (q & 15) : (q >> 4);
        v = g_h2f(g_rd16(b)) * (float)n + g_h2f(g_rd16(b + 2));
    } else if (kind == 2) {
        const unsigned char* b = w + (row * (cols >> 5) + blk) * 34;
        v = g_h2f(g_rd16(b)) * (float)(signed char)b[2 + j];
    } else if (kind == 3) {
        v = g_h2f(((const unsigned short*)w)[row * cols + i]);
    } else {
        v = ((const float*)w)[row * cols + i];
    }
    out[i] = v;
}

// out = x / rms(x) * w, one block.
extern "C" __global__ void rmsnorm(const float* x, const float* w, float* out, int n, float eps) {
    __shared__ float part[32];
    float s = 0.f;
    for (int i = threadIdx.x; i < n; i += blockDim.x) s += x[i] * x[i];
    for (int o = 16; o > 0; o >>= 1) s += __shfl_down_sync(0xffffffffu, s, o);
    if ((threadIdx.x & 31) == 0) part[threadIdx.x >> 5] = s;
    __syncthreads();
    if (threadIdx.x < 32) {
        s = threadIdx.x < (blockDim.x >> 5) ? part[threadIdx.x] : 0.f;
        for (int o = 16; o > 0; o >>= 1) s += __shfl_down_sync(0xffffffffu, s, o);
        if (threadIdx.x == 0) part[0] = s;
    }
    __syncthreads();
    float scale = rsqrtf(part[0] / n + eps);
    for (int i = threadIdx.x; i < n; i += blockDim.x) out[i] = x[i] * scale * w[i];
}

// Rotary embedding of n_heads heads at position *pos; neox: pairs (i, i + rot/2).
extern "C" __global__ void rope(float* v, int n_heads, int head_dim, int rot, const int* pos, float base, int neox) {
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    int half = rot >> 1;
    if (t >= n_heads * half) return;
    int h = t / half, i = t % half;
    float theta = (float)(*pos) * powf(base, -2.f * (float)i / (float)rot);
    float s, c;
    sincosf(theta, &s, &c);
    float* hv = v + h * head_dim;
    int a = neox ? i : 2 * i, b = neox ? i + half : 2 * i + 1;
    float x0 = hv[a], x1 = hv[b];
    hv[a] = x0 * c - x1 * s;
    hv[b] = x0 * s + x1 * c;
}

// Append k, v (kvd each) at row *pos of this layer's cache.
extern "C" __global__ void kv_store(const float* k, const float* v, float* kc, float* vc, const int* pos, int kvd) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= kvd) return;
    long at = (long)(*pos) * kvd + i;
    kc[at] = k[i];
    vc[at] = v[i];
}

// One block per query head: softmax(q . K^T * scale) . V over positions 0..*pos.
// Dynamic shared memory: (*pos + 1) floats of scores (the caller bounds the context).
extern "C" __global__ void attention(const float* q, const float* kc, const float* vc, float* out, int n_head, int n_head_kv, int head_dim, const int* pos, float scale) {
    extern __shared__ float sc[];
    __shared__ float red[32];
    int h = blockIdx.x;
    int kvh = h / (n_head / n_head_kv);
    int n = *pos + 1, kvd = n_head_kv * head_dim;
    const float* qh = q + h * head_dim;
    for (int t = threadIdx.x; t < n; t += blockDim.x) {
        const float* kr = kc + (long)t * kvd + kvh * head_dim;
        float s = 0.f;
        for (int d = 0; d < head_dim; d++) s += qh[d] * kr[d];
        sc[t] = s * scale;
    }
    __syncthreads();
    float m = -3.4e38f;
    for (int t = threadIdx.x; t < n; t += blockDim.x) m = fmaxf(m, sc[t]);
    for (int o = 16; o > 0; o >>= 1) m = fmaxf(m, __shfl_down_sync(0xffffffffu, m, o));
    if ((threadIdx.x & 31) == 0) red[threadIdx.x >> 5] = m;
    __syncthreads();
    if (threadIdx.x == 0) {
        float mm = red[0];
        for (int w = 1; w < (blockDim.x >> 5); w++) mm = fmaxf(mm, red[w]);
        red[0] = mm;
    }
    __syncthreads();
    m = red[0];
    __syncthreads();
    float sum = 0.f;
    for (int t = threadIdx.x; t < n; t += blockDim.x) {
        float e = expf(sc[t] - m);
        sc[t] = e;
        sum += e;
    }
    for (int o = 16; o > 0; o >>= 1) sum += __shfl_down_sync(0xffffffffu, sum, o);
    if ((threadIdx.x & 31) == 0) red[threadIdx.x >> 5] = sum;
    __syncthreads();
    if (threadIdx.x == 0) {
        float ss = 0.f;
        for (int w = 0; w < (blockDim.x >> 5); w++) ss += red[w];
        red[0] = ss;
    }
    __syncthreads();
    float inv = 1.f / red[0];
    for (int d = threadIdx.x; d < head_dim; d += blockDim.x) {
        float acc = 0.f;
        for (int t = 0; t < n; t++) acc += sc[t] * vc[(long)t * kvd + kvh * head_dim + d];
        out[h * head_dim + d] = acc * inv;
    }
}

// x += y.
extern "C" __global__ void add_inplace(float* x, const float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] += y[i];
}
