// Tensor-core GEMMs for prompt chunks (compiled after matvec.cu and graph.cu, whose
// helpers and row maps they use; sm_80+ int8 mma.sync). The activation rows are quantized
// once per op by quantize_rows (stage_x's q8 rule, so the values equal the row kernels'
// staging), then each 128-thread block computes a 64 x 64 tile of the output: 64 activation
// rows (blockIdx.x) by 64 logical weight rows of a row map (blockIdx.y), 4 warps of 32 x 32.
// Every 32-value unit is one m16n8k32 product whose int32 result is scaled by the unit's
// activation and weight scales into a float accumulator, as the CPU's int8 kernels do
// (Q4_1 adds its minimum times the activation unit's scaled sum). Q4_0, Q4_1 and Q8_0
// (signed int8 both sides: Q4_0 nibbles less 8, Q4_1 nibbles as they are); a row's unit
// count must be even (host: `mma_fits`).

// The stage layout comes from the host as #defines (`kernel_source` in mod.rs, which also
// sizes the launch from it): MMA_UNITS units (32 values) per pipeline stage, MMA_STAGES
// stages in flight, MMA_ROWS-row tiles, and row strides padded so the 8 rows an ldmatrix phase
// (or a fragment load) reads fall in distinct banks: MMA_A_STRIDE for the activation tile,
// MMA_B_STRIDE_Q4 / _Q8 for the weight payloads. The copy mappings below assume these values.
static_assert(MMA_UNITS == 4 && MMA_ROWS == 64, "the copy and fragment mappings assume 4-unit stages of 64-row tiles");

// One stage's shared-memory layout for codec kind K (host: `mma_smem`): activations (64
// rows x MMA_A_STRIDE), weight payloads (64 rows x B_STRIDE: Q4 16 and Q8_0 32 bytes a unit,
// padded), weight scales (64 rows x an f16 d per unit; Q4_1: d | m << 16), activation scales
// (64 rows x a float d per unit; Q4_1: then 64 rows x the unit's scaled sum s).
template <int K> struct MmaStage {
    static constexpr int B_STRIDE = K == 2 ? MMA_B_STRIDE_Q8 : MMA_B_STRIDE_Q4;
    static constexpr int A_BYTES = MMA_ROWS * MMA_A_STRIDE;
    static constexpr int B_BYTES = MMA_ROWS * B_STRIDE;
    static constexpr int WS_BYTES = MMA_ROWS * (K == 1 ? 4 : 2) * MMA_UNITS;
    static constexpr int DX_BYTES = MMA_ROWS * 4 * MMA_UNITS * (K == 1 ? 2 : 1);
    static constexpr int BYTES = A_BYTES + B_BYTES + WS_BYTES + DX_BYTES;
};

// cp.async of 16 or 4 bytes that writes zeros instead when !valid (src is then not read).
__device__ __forceinline__ void cp_async16z(void* dst, const void* src, bool valid) {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" ::"r"((unsigned)__cvta_generic_to_shared(dst)), "l"(src), "r"(valid ? 16 : 0) : "memory");
}
__device__ __forceinline__ void cp_async4z(void* dst, const void* src, bool valid) {
    asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;" ::"r"((unsigned)__cvta_generic_to_shared(dst)), "l"(src), "r"(valid ? 4 : 0) : "memory");
}

// The A fragment of m16n8k32 (16 rows x 32 int8) from shared memory: lane l gives the
// address of row l & 15, bytes 16 (l >> 4) on; r[j] = rows g + 8 (j & 1), bytes 16 (j >> 1)
// + 4 t on (g = lane / 4, t = lane % 4), the layout mma.sync takes.
__device__ __forceinline__ void ldmatrix_x4(unsigned* r, const void* p) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"((unsigned)__cvta_generic_to_shared(p)));
}

// c = A (16 x 32, rows of int8) . B (32 x 8: b0 = k 4t.., b1 = k 16 + 4t.., column g);
// c[0], c[1]: row g, columns 2t, 2t + 1; c[2], c[3]: row g + 8.
__device__ __forceinline__ void mma_s8(int* c, const unsigned* a, unsigned b0, unsigned b1) {
    asm("mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%10,%10,%10,%10};"
        : "=r"(c[0]), "=r"(c[1]), "=r"(c[2]), "=r"(c[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1), "r"(0));
}

__device__ __forceinline__ float lane_of(float4 v, int k) { return k == 0 ? v.x : (k == 1 ? v.y : (k == 2 ? v.z : v.w)); }
__device__ __forceinline__ unsigned int lane_of_u(uint4 v, int k) { return k == 0 ? v.x : (k == 1 ? v.y : (k == 2 ? v.z : v.w)); }

// f16 scale of unit k (0..3) from a row's two scale words, as f32.
__device__ __forceinline__ float unit_scale(uint2 w, int k) {
    unsigned int word = k < 2 ? w.x : w.y;
    return h2f((k & 1) ? word >> 16 : word & 0xffff);
}

// xq (rows, cols) int8 and xd (rows, cols / 32, 2) = row blockIdx.x of x quantized in
// 32-value groups by stage_x (RMS-normed with nw first when nw is not null): per group its
// scale d and its scaled sum s. 256 threads; dynamic shared memory: staged_bytes(0, cols)
// rounded up to 16.
extern "C" __global__ void __launch_bounds__(256) quantize_rows(const float* x, const float* nw, float eps, int cols, signed char* xq, float* xd) {
    extern __shared__ int sm[];
    pdl_wait_then_release();
    long b = blockIdx.x;
    stage_x(0, x + b * cols, nw, eps, cols, sm);
    int4* dst = (int4*)(xq + b * cols);
    for (int i = threadIdx.x; i < (cols >> 4); i += blockDim.x) dst[i] = ((const int4*)sm)[i];
    const float* gd = (const float*)(sm + (cols >> 2));
    int groups = cols >> 5;
    for (int i = threadIdx.x; i < groups; i += blockDim.x) ((float2*)xd)[b * groups + i] = make_float2(gd[i], gd[groups + i]);
}

// The block's tile of map's rows for n activation rows (xq, xd from quantize_rows): every
// output (activation row b < n, logical row pair i0, i0 + 1 < total) goes through
// map.finish(b, i0, total, sums) once.
template <int K, class Map>
__device__ __forceinline__ void mma_rows(Map& map, int total, int cols, const signed char* xq, const float* xd, int n, int* smi) {
    using S = MmaStage<K>;
    unsigned char* sm = (unsigned char*)smi;
    int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    int g = lane >> 2, t = lane & 3;
    int wm = (warp & 1) * 32, wn = (warp >> 1) * 32;  // the warp's activation and weight rows in the tile
    int m0 = blockIdx.x * 64, n0 = blockIdx.y * 64;
    int units = cols >> 5, stages = (units + MMA_UNITS - 1) / MMA_UNITS;
    // The weight rows this thread copies, the same every stage: payload chunks (Q8_0: 4 of
    // rows tid / 8 + 16 i; Q4: 2 of rows tid / 4 + 32 i) and scale words (row tid / 2: one
    // word of two f16, Q4_1 two words of d | m).
    constexpr int BR = K == 2 ? 4 : 2;
    Row brow[BR];
    #pragma unroll
    for (int i = 0; i < BR; i++) brow[i] = map.row(min(n0 + (K == 2 ? (tid >> 3) + 16 * i : (tid >> 2) + 32 * i), total - 1));
    Row wrow = map.row(min(n0 + (tid >> 1), total - 1));
    auto load_w = [&](int s) {
        unsigned char* st = sm + (s % MMA_STAGES) * S::BYTES;
        unsigned char* sb = st + S::A_BYTES;
        unsigned int* sws = (unsigned int*)(sb + S::B_BYTES);
        int u0 = s * MMA_UNITS;
        #pragma unroll
        for (int i = 0; i < BR; i++) {
            int unit = K == 2 ? (tid >> 1) & 3 : tid & 3, half = K == 2 ? tid & 1 : 0;
            int row = K == 2 ? (tid >> 3) + 16 * i : (tid >> 2) + 32 * i;
            int u = u0 + unit;
            const unsigned char* src = brow[i].w + ((long)brow[i].row * units + min(u, units - 1)) * (K == 2 ? 32 : 16) + 16 * half;
            cp_async16z(sb + row * S::B_STRIDE + unit * (K == 2 ? 32 : 16) + 16 * half, src, u < units);
        }
        int pair = tid & 1, u = u0 + 2 * pair;
        const unsigned int* a = (const unsigned int*)wrow.w + wrow.a_off;
        if (K == 1) {
            #pragma unroll
            for (int j = 0; j < 2; j++) cp_async4z(sws + (tid >> 1) * 4 + 2 * pair + j, a + (long)wrow.row * units + min(u + j, units - 1), u + j < units);
        } else {
            cp_async4z(sws + (tid >> 1) * 2 + pair, a + (((long)wrow.row * units + min(u, units - 2)) >> 1), u < units);
        }
    };
    auto load_x = [&](int s) {
        unsigned char* st = sm + (s % MMA_STAGES) * S::BYTES;
        float* sdx = (float*)(st + S::A_BYTES + S::B_BYTES + S::WS_BYTES);
        int u0 = s * MMA_UNITS;
        #pragma unroll
        for (int i = 0; i < 4; i++) {
            int row = (tid >> 3) + 16 * i, unit = (tid >> 1) & 3, half = tid & 1;
            int b = m0 + row, u = u0 + unit;
            bool ok = b < n && u < units;
            cp_async16z(st + row * MMA_A_STRIDE + unit * 32 + 16 * half, xq + (ok ? (long)b * cols + u * 32 + 16 * half : 0), ok);
        }
        #pragma unroll
        for (int i = 0; i < 2; i++) {
            int row = (tid >> 2) + 32 * i, unit = tid & 3;
            int b = m0 + row, u = u0 + unit;
            bool ok = b < n && u < units;
            long at = ok ? 2 * ((long)b * units + u) : 0;
            cp_async4z(sdx + row * 4 + unit, xd + at, ok);
            if (K == 1) cp_async4z(sdx + MMA_ROWS * 4 + row * 4 + unit, xd + at + 1, ok);
        }
    };
    float acc[2][4][4];
    #pragma unroll
    for (int mi = 0; mi < 2; mi++) {
        #pragma unroll
        for (int ni = 0; ni < 4; ni++) {
            #pragma unroll
            for (int e = 0; e < 4; e++) acc[mi][ni][e] = 0.f;
        }
    }
    // The first stages' weights depend on no earlier kernel: copy them before waiting.
    for (int s = 0; s < MMA_STAGES - 1; s++)
        if (s < stages) load_w(s);
    pdl_wait_then_release();
    for (int s = 0; s < MMA_STAGES - 1; s++) {
        if (s < stages) load_x(s);
        cp_commit();
    }
    for (int s = 0; s < stages; s++) {
        // Stage s has landed, and every warp is done with the buffer stage s - 1 used.
        cp_wait<MMA_STAGES - 2>();
        __syncthreads();
        int next = s + MMA_STAGES - 1;
        if (next < stages) {
            load_w(next);
            load_x(next);
        }
        cp_commit();
        const unsigned char* st = sm + (s % MMA_STAGES) * S::BYTES;
        const unsigned int* sb = (const unsigned int*)(st + S::A_BYTES);
        const unsigned int* sws = (const unsigned int*)(st + S::A_BYTES + S::B_BYTES);
        const float4* sdx = (const float4*)(st + S::A_BYTES + S::B_BYTES + S::WS_BYTES);
        // Scales of this stage's 4 units: activation rows wm + 16 mi + g (+ 8), weight rows
        // wn + 8 ni + 2t (+ 1); Q4_1 also the activation units' sums (sx).
        float4 dx[2][2], sx[2][2];
        uint4 dw[4][2];
        #pragma unroll
        for (int mi = 0; mi < 2; mi++) {
            #pragma unroll
            for (int h = 0; h < 2; h++) {
                dx[mi][h] = sdx[wm + 16 * mi + g + 8 * h];
                if (K == 1) sx[mi][h] = sdx[MMA_ROWS + wm + 16 * mi + g + 8 * h];
            }
        }
        #pragma unroll
        for (int ni = 0; ni < 4; ni++) {
            #pragma unroll
            for (int h = 0; h < 2; h++) {
                int row = wn + 8 * ni + 2 * t + h;
                if (K == 1) {
                    dw[ni][h] = ((const uint4*)sws)[row];
                } else {
                    uint2 v = ((const uint2*)sws)[row];
                    dw[ni][h] = make_uint4(v.x, v.y, 0u, 0u);
                }
            }
        }
        #pragma unroll
        for (int k = 0; k < MMA_UNITS; k++) {
            unsigned a[2][4];
            #pragma unroll
            for (int mi = 0; mi < 2; mi++) ldmatrix_x4(a[mi], st + (wm + 16 * mi + (lane & 15)) * MMA_A_STRIDE + 32 * k + 16 * (lane >> 4));
            #pragma unroll
            for (int ni = 0; ni < 4; ni++) {
                int row = wn + 8 * ni + g;
                unsigned b0, b1;
                if (K == 2) {
                    b0 = sb[row * (S::B_STRIDE / 4) + 8 * k + t];
                    b1 = sb[row * (S::B_STRIDE / 4) + 8 * k + 4 + t];
                } else {
                    // Byte i of a Q4 payload holds value i (low nibble) and i + 16 (high);
                    // Q4_0's values are centred on 8, Q4_1's are not.
                    unsigned w = sb[row * (S::B_STRIDE / 4) + 4 * k + t];
                    b0 = w & 0x0F0F0F0Fu;
                    b1 = (w >> 4) & 0x0F0F0F0Fu;
                    if (K == 0) {
                        b0 = __vsub4(b0, 0x08080808u);
                        b1 = __vsub4(b1, 0x08080808u);
                    }
                }
                // The two weight rows' unit scales (Q4_1: d and m).
                float w0, w1, mn0 = 0.f, mn1 = 0.f;
                if (K == 1) {
                    unsigned int s0 = lane_of_u(dw[ni][0], k), s1 = lane_of_u(dw[ni][1], k);
                    w0 = h2f(s0 & 0xffff);
                    w1 = h2f(s1 & 0xffff);
                    mn0 = h2f(s0 >> 16);
                    mn1 = h2f(s1 >> 16);
                } else {
                    w0 = unit_scale(make_uint2(dw[ni][0].x, dw[ni][0].y), k);
                    w1 = unit_scale(make_uint2(dw[ni][1].x, dw[ni][1].y), k);
                }
                #pragma unroll
                for (int mi = 0; mi < 2; mi++) {
                    int c[4];
                    mma_s8(c, a[mi], b0, b1);
                    float x0 = lane_of(dx[mi][0], k), x1 = lane_of(dx[mi][1], k);
                    if (K == 1) {
                        float s0 = lane_of(sx[mi][0], k), s1 = lane_of(sx[mi][1], k);
                        acc[mi][ni][0] += (float)c[0] * (x0 * w0) + mn0 * s0;
                        acc[mi][ni][1] += (float)c[1] * (x0 * w1) + mn1 * s0;
                        acc[mi][ni][2] += (float)c[2] * (x1 * w0) + mn0 * s1;
                        acc[mi][ni][3] += (float)c[3] * (x1 * w1) + mn1 * s1;
                    } else {
                        acc[mi][ni][0] += (float)c[0] * (x0 * w0);
                        acc[mi][ni][1] += (float)c[1] * (x0 * w1);
                        acc[mi][ni][2] += (float)c[2] * (x1 * w0);
                        acc[mi][ni][3] += (float)c[3] * (x1 * w1);
                    }
                }
            }
        }
    }
    cp_wait<0>();
    #pragma unroll
    for (int mi = 0; mi < 2; mi++) {
        #pragma unroll
        for (int ni = 0; ni < 4; ni++) {
            int i0 = n0 + wn + 8 * ni + 2 * t;
            if (i0 >= total) continue;
            #pragma unroll
            for (int h = 0; h < 2; h++) {
                int b = m0 + wm + 16 * mi + g + 8 * h;
                if (b < n) {
                    float s[2] = {acc[mi][ni][2 * h], acc[mi][ni][2 * h + 1]};
                    map.finish(b, i0, total, s);
                }
            }
        }
    }
    map.flush();
}

// y (n, rows) = xq . W^T (added into y when add != 0). Grid (n / 64, rows / 64) rounded
// up, 128 threads; dynamic shared memory `mma_smem(K)`.
#define MMA_MATMUL(K)                                                                                       \
    extern "C" __global__ void __launch_bounds__(128) mma_matmul_k##K(const unsigned char* w, int a_off,     \
            const signed char* xq, const float* xd, float* y, int rows, int cols, int add, int n) {        \
        extern __shared__ int sm[];                                                                         \
        PlainMap<2> m{w, a_off, y, add, nullptr, 0ull};                                                     \
        mma_rows<K>(m, rows, cols, xq, xd, n, sm);                                                          \
    }
MMA_MATMUL(0) MMA_MATMUL(1) MMA_MATMUL(2)

// Q, K and V of n prompt rows at positions *pos.. with RoPE and the KV-mirror append
// (RopeQkvMap): `count` rows from row `first` (even); q (n, n_head * head_dim). Grid (n / 64,
// count / 64).
#define MMA_QKV(K)                                                                                                    \
    extern "C" __global__ void __launch_bounds__(128) mma_qkv_rope_k##K(const unsigned char* wq, const unsigned char* wk, \
            const unsigned char* wv, int aq, int ak, int av, const signed char* xq, const float* xd, float* q, kv_t* kc,  \
            kv_t* vc, int n_head, int n_head_kv, int head_dim, int rot, int neox, float base, const int* pos, int cols,   \
            int n, int first, int count) {                                                                            \
        extern __shared__ int sm[];                                                                                   \
        RopeQkvMap m{wq, wk, wv, aq, ak, av, q, kc, vc, n_head, n_head_kv, head_dim, rot, neox, *pos, base, first >> 1}; \
        mma_rows<K>(m, count, cols, xq, xd, n, sm);                                                                   \
    }
MMA_QKV(0) MMA_QKV(1) MMA_QKV(2)

// h (n, rows) = silu(gate . x) * (up . x) for n prompt rows (GluMap). Grid (n / 64, 2 rows / 64).
#define MMA_GATE_UP(K)                                                                                               \
    extern "C" __global__ void __launch_bounds__(128) mma_gate_up_silu_k##K(const unsigned char* wg,                  \
            const unsigned char* wu, int ag, int au, const signed char* xq, const float* xd, float* h, int rows,     \
            int cols, int n) {                                                                                       \
        extern __shared__ int sm[];                                                                                  \
        GluMap<2> m{{wg, wu, ag, au}, h};                                                                            \
        mma_rows<K>(m, 2 * rows, cols, xq, xd, n, sm);                                                               \
    }
MMA_GATE_UP(0) MMA_GATE_UP(1) MMA_GATE_UP(2)
