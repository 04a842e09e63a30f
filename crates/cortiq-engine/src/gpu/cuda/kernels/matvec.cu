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

// The 32 activations of block i as 8 float4 loads (x rows are 16-byte aligned: cols % 32 == 0).
__device__ __forceinline__ void load_x32(const float* xv, float* xs) {
    const float4* p = (const float4*)xv;
    #pragma unroll
    for (int k = 0; k < 8; k++) {
        float4 f = p[k];
        xs[4 * k] = f.x; xs[4 * k + 1] = f.y; xs[4 * k + 2] = f.z; xs[4 * k + 3] = f.w;
    }
}

// Codec kinds shared with the host: 0 q4_0, 1 q4_1, 2 q8_0, 3 f16, 4 f32.
// One quantized block (32 weights) of row `wr` dotted with the 32 activations xs.
__device__ __forceinline__ float block_dot(int kind, const unsigned char* wr, int i, const float* xs) {
    float s = 0.f;
    if (kind == 0) {
        // 18-byte blocks (f16 d, 16 nibble bytes), w = d * (q - 8); read as 2-byte words.
        const unsigned short* blk = (const unsigned short*)(wr + (long)i * 18);
        #pragma unroll
        for (int k = 0; k < 8; k++) {
            unsigned short q2 = blk[1 + k];
            unsigned char q0 = q2 & 0xff, q1 = q2 >> 8;
            s += (float)((int)(q0 & 15) - 8) * xs[2 * k] + (float)((int)(q0 >> 4) - 8) * xs[2 * k + 16]
               + (float)((int)(q1 & 15) - 8) * xs[2 * k + 1] + (float)((int)(q1 >> 4) - 8) * xs[2 * k + 17];
        }
        return h2f(blk[0]) * s;
    } else if (kind == 1) {
        // 20-byte blocks (f16 d, f16 m, 16 nibble bytes), w = d * q + m; 4-byte words.
        const unsigned int* blk = (const unsigned int*)(wr + (long)i * 20);
        float sx = 0.f;
        #pragma unroll
        for (int k = 0; k < 4; k++) {
            unsigned int q4 = blk[1 + k];
            #pragma unroll
            for (int t = 0; t < 4; t++) {
                unsigned char q = (q4 >> (8 * t)) & 0xff;
                int j = 4 * k + t;
                s += (float)(q & 15) * xs[j] + (float)(q >> 4) * xs[j + 16];
                sx += xs[j] + xs[j + 16];
            }
        }
        unsigned int dm = blk[0];
        return h2f(dm & 0xffff) * s + h2f(dm >> 16) * sx;
    } else {
        // 34-byte blocks (f16 d, 32 int8), w = d * q; 2-byte words.
        const unsigned short* blk = (const unsigned short*)(wr + (long)i * 34);
        #pragma unroll
        for (int k = 0; k < 16; k++) {
            unsigned short q2 = blk[1 + k];
            s += (float)(signed char)(q2 & 0xff) * xs[2 * k] + (float)(signed char)(q2 >> 8) * xs[2 * k + 1];
        }
        return h2f(blk[0]) * s;
    }
}

__device__ __forceinline__ int block_bytes(int kind) {
    return kind == 0 ? 18 : (kind == 1 ? 20 : 34);
}

// This lane's part of row . x: blocks lane, lane + 32, ... (quantized) or values (floats).
__device__ __forceinline__ float lane_dot(int kind, const unsigned char* w, long row, const float* xb, int cols, int lane) {
    float sum = 0.f;
    if (kind <= 2) {
        int nb = cols >> 5;
        const unsigned char* wr = w + row * nb * block_bytes(kind);
        for (int i = lane; i < nb; i += 32) {
            float xs[32];
            load_x32(xb + i * 32, xs);
            sum += block_dot(kind, wr, i, xs);
        }
    } else if (kind == 3) {
        const unsigned short* wr = (const unsigned short*)w + row * cols;
        for (int i = lane; i < cols; i += 32) sum += h2f(wr[i]) * xb[i];
    } else {
        const float* wr = (const float*)w + row * cols;
        for (int i = lane; i < cols; i += 32) sum += wr[i] * xb[i];
    }
    return sum;
}

// Most rows per warp of the matvec: each activation block loaded once serves that many rows.
#define MV_ROWS 4

// y (batch, rows) = x (batch, cols) . W^T: each warp takes `rpw` (1..MV_ROWS) consecutive
// rows of one batch row, so every activation load is reused rpw times. Large matrices want
// rpw = MV_ROWS; small ones want every row on its own warp to fill the chip.
extern "C" __global__ void matvec(const unsigned char* w, int kind, const float* x, float* y, int rows, int cols, int batch, int rpw) {
    int warp = (blockIdx.x * blockDim.x + threadIdx.x) >> 5, lane = threadIdx.x & 31, b = blockIdx.y;
    long r0 = (long)warp * rpw;
    if (r0 >= rows) return;
    const float* xb = x + (long)b * cols;
    float acc[MV_ROWS];
    #pragma unroll
    for (int r = 0; r < MV_ROWS; r++) acc[r] = 0.f;
    if (kind <= 2) {
        int nb = cols >> 5, bb = block_bytes(kind);
        for (int i = lane; i < nb; i += 32) {
            float xs[32];
            load_x32(xb + i * 32, xs);
            #pragma unroll
            for (int r = 0; r < MV_ROWS; r++)
                if (r < rpw && r0 + r < rows) acc[r] += block_dot(kind, w + (r0 + r) * nb * bb, i, xs);
        }
    } else {
        #pragma unroll
        for (int r = 0; r < MV_ROWS; r++)
            if (r < rpw && r0 + r < rows) acc[r] = lane_dot(kind, w, r0 + r, xb, cols, lane);
    }
    #pragma unroll
    for (int r = 0; r < MV_ROWS; r++) {
        float s = warp_sum(acc[r]);
        if (lane == 0 && r < rpw && r0 + r < rows) y[(long)b * rows + r0 + r] = s;
    }
}

// g = silu(g) * u, element-wise over n values.
extern "C" __global__ void silu_mul(float* g, const float* u, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        float v = g[i];
        g[i] = v / (1.f + expf(-v)) * u[i];
    }
}
