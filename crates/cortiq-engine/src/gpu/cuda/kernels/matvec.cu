// cortiq CUDA kernels, compiled at run time by NVRTC.
// y (batch, rows) = x (batch, cols) . W^T for packed weight rows; one warp per (row, batch).
// First-cut kernels: correct on any shape, not yet tuned (one 32-lane warp per row,
// activations read from global memory per block).

__device__ __forceinline__ float h2f(unsigned short h) {
    float f;
    asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h));
    return f;
}

__device__ __forceinline__ float warp_sum(float v) {
    for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffffu, v, o);
    return v;
}

__device__ __forceinline__ unsigned short rd16(const unsigned char* p) {
    return (unsigned short)(p[0] | (p[1] << 8));
}

// Q4_0 / q4_tiled: 18-byte blocks (f16 d, 16 nibble bytes), w = d * (q - 8).
extern "C" __global__ void matvec_q4_0(const unsigned char* w, const float* x, float* y, int rows, int cols, int batch) {
    int row = (blockIdx.x * blockDim.x + threadIdx.x) >> 5, lane = threadIdx.x & 31, b = blockIdx.y;
    if (row >= rows) return;
    int nb = cols >> 5;
    const unsigned char* wr = w + (size_t)row * nb * 18;
    const float* xb = x + (size_t)b * cols;
    float sum = 0.f;
    for (int i = lane; i < nb; i += 32) {
        const unsigned char* blk = wr + (size_t)i * 18;
        const float* xv = xb + i * 32;
        float s = 0.f;
        for (int j = 0; j < 16; j++) {
            unsigned char q = blk[2 + j];
            s += (float)((int)(q & 15) - 8) * xv[j] + (float)((int)(q >> 4) - 8) * xv[j + 16];
        }
        sum += h2f(rd16(blk)) * s;
    }
    sum = warp_sum(sum);
    if (lane == 0) y[(size_t)b * rows + row] = sum;
}

// Q4_1: 20-byte blocks (f16 d, f16 m, 16 nibble bytes), w = d * q + m.
extern "C" __global__ void matvec_q4_1(const unsigned char* w, const float* x, float* y, int rows, int cols, int batch) {
    int row = (blockIdx.x * blockDim.x + threadIdx.x) >> 5, lane = threadIdx.x & 31, b = blockIdx.y;
    if (row >= rows) return;
    int nb = cols >> 5;
    const unsigned char* wr = w + (size_t)row * nb * 20;
    const float* xb = x + (size_t)b * cols;
    float sum = 0.f;
    for (int i = lane; i < nb; i += 32) {
        const unsigned char* blk = wr + (size_t)i * 20;
        const float* xv = xb + i * 32;
        float s = 0.f, sx = 0.f;
        for (int j = 0; j < 16; j++) {
            unsigned char q = blk[4 + j];
            s += (float)(q & 15) * xv[j] + (float)(q >> 4) * xv[j + 16];
            sx += xv[j] + xv[j + 16];
        }
        sum += h2f(rd16(blk)) * s + h2f(rd16(blk + 2)) * sx;
    }
    sum = warp_sum(sum);
    if (lane == 0) y[(size_t)b * rows + row] = sum;
}

// Q8_0: 34-byte blocks (f16 d, 32 int8), w = d * q.
extern "C" __global__ void matvec_q8_0(const unsigned char* w, const float* x, float* y, int rows, int cols, int batch) {
    int row = (blockIdx.x * blockDim.x + threadIdx.x) >> 5, lane = threadIdx.x & 31, b = blockIdx.y;
    if (row >= rows) return;
    int nb = cols >> 5;
    const unsigned char* wr = w + (size_t)row * nb * 34;
    const float* xb = x + (size_t)b * cols;
    float sum = 0.f;
    for (int i = lane; i < nb; i += 32) {
        const unsigned char* blk = wr + (size_t)i * 34;
        const float* xv = xb + i * 32;
        float s = 0.f;
        for (int j = 0; j < 32; j++) s += (float)(signed char)blk[2 + j] * xv[j];
        sum += h2f(rd16(blk)) * s;
    }
    sum = warp_sum(sum);
    if (lane == 0) y[(size_t)b * rows + row] = sum;
}

// F16 rows.
extern "C" __global__ void matvec_f16(const unsigned char* w, const float* x, float* y, int rows, int cols, int batch) {
    int row = (blockIdx.x * blockDim.x + threadIdx.x) >> 5, lane = threadIdx.x & 31, b = blockIdx.y;
    if (row >= rows) return;
    const unsigned short* wr = (const unsigned short*)w + (size_t)row * cols;
    const float* xb = x + (size_t)b * cols;
    float sum = 0.f;
    for (int i = lane; i < cols; i += 32) sum += h2f(wr[i]) * xb[i];
    sum = warp_sum(sum);
    if (lane == 0) y[(size_t)b * rows + row] = sum;
}

// F32 rows.
extern "C" __global__ void matvec_f32(const unsigned char* w, const float* x, float* y, int rows, int cols, int batch) {
    int row = (blockIdx.x * blockDim.x + threadIdx.x) >> 5, lane = threadIdx.x & 31, b = blockIdx.y;
    if (row >= rows) return;
    const float* wr = (const float*)w + (size_t)row * cols;
    const float* xb = x + (size_t)b * cols;
    float sum = 0.f;
    for (int i = lane; i < cols; i += 32) sum += wr[i] * xb[i];
    sum = warp_sum(sum);
    if (lane == 0) y[(size_t)b * rows + row] = sum;
}

// g = silu(g) * u, element-wise over n values.
extern "C" __global__ void silu_mul(float* g, const float* u, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        float v = g[i];
        g[i] = v / (1.f + expf(-v)) * u[i];
    }
}
