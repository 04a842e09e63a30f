// Causal attention of a prompt chunk's rows over the KV mirror on the tensor cores,
// FlashAttention-2 style (host: `launch_attention` in graph.rs). Block (h, tile, piece)
// takes query rows [64 tile, 64 tile + 64) of head h over its piece's keys (a tile's whole
// context where the host does not split it: where a few tiles would leave most SMs idle it
// splits the keys into pieces, merged by attention_merge); warp w holds rows 16 (w % 4) ..
// 16 (w % 4) + 15 as m16n8k16 A fragments (q scaled, rounded to f16; lane: rows g and g + 8,
// g = lane / 4). Keys stream from the f16 mirror through shared memory 32 at a time (K and V
// as rows, V's B fragments read transposed by ldmatrix; each chunk's loads issued while the
// chunk before it is scored); S = q . K^T and O += P . V run as mma.sync with f32
// accumulation, the online softmax per row in f32 between them (P rounded to f16, as the CPU
// path's and llama.cpp's flash attention do).
// OS warps share a 16-row group, each scoring S in full and holding HD / OS of O's
// dimensions (head size 256: O of one warp would not fit the registers beside q's
// fragments). WINDOWED kernels (`flash_window_h*`) take a sliding window (window > 0):
// the tile starts at the chunk its first row's window reaches and masks what each row does
// not see, and a row that has seen nothing yet rescales by 1; the others (`flash_rows_h*`)
// compile it out. Rows past `rows` compute on zeros and are not written; a NaN in a
// score reaches the row's output. The scaled q is guarded as it is rounded (`bad`, SPEC
// section 6; K and V are f16 in the mirror on every path, as in the CPU path's cache, and P
// is in [0, 1]): each thread notes whether its values fit and sets the word once at its end.

// c (16 x 8, f32) += a (16 x 16, f16, row) . b (16 x 8, f16, col).
__device__ __forceinline__ void mma_f16(float* c, const unsigned* a, unsigned b0, unsigned b1) {
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
                 : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

// b0, b1: the m16n8k16 B fragments of a 16 x 8 block of V stored as rows (16 keys of 8 values
// from `row`, KS apart): lanes 0-15 name the rows, each lane gets keys 2 t4, 2 t4 + 1 (and 8 on)
// of value g.
__device__ __forceinline__ void ldmatrix_x2_trans(unsigned& b0, unsigned& b1, const unsigned short* row) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16 {%0, %1}, [%2];" : "=r"(b0), "=r"(b1) : "r"((unsigned)__cvta_generic_to_shared(row)));
}

// Two floats as f16x2 (lo in the low half, the lower index).
__device__ __forceinline__ unsigned pack_h2(float lo, float hi) { return (unsigned)f2h(lo) | ((unsigned)f2h(hi) << 16); }


template <int HD, int OS, bool WINDOWED>
__device__ __forceinline__ void flash_rows(const float* q, const kv_t* kc, const kv_t* vc, float* out, float* part, int n_head, int n_head_kv, const int* pos, float scale, int rows, int window, int span, int part_stride, unsigned int* bad) {
    if (!WINDOWED) window = 0;
    constexpr int KS = HD + 8;  // K and V row stride in halves (8 rows of a fragment load hit distinct banks)
    constexpr int KT = HD / 16; // 16-dimension steps of S = q . K^T
    constexpr int DT = HD / 8 / OS;  // 8-dimension tiles of O a warp holds
    __shared__ __align__(16) unsigned short ks[32 * KS];  // (32 keys, HD)
    __shared__ __align__(16) unsigned short vs[32 * KS];  // (32 keys, HD)
    pdl_wait_then_release();
    int h = blockIdx.x, r0 = blockIdx.y * 64, pz = blockIdx.z;
    int tid = threadIdx.x, lane = tid & 31, g = lane >> 2, t4 = lane & 3, d0 = OS == 1 ? 0 : (tid >> 7) * DT;
    int p0 = *pos, kvh = h / (n_head / n_head_kv), kvd = n_head_kv * HD, qd = n_head * HD;
    // The keys this block takes: the tile's, within its piece where the keys are split.
    int t_first = att_first(p0 + r0 + 1, window) & ~31, last = p0 + min(r0 + 64, rows) - 1;
    if (span > 0) {
        t_first = max(t_first, pz * span);
        last = min(last, pz * span + span - 1);
        if (t_first > last) return;
    }
    int ra = r0 + ((tid >> 5) & 3) * 16 + g, rb = ra + 8;
    int first_a = att_first(p0 + ra + 1, window), first_b = att_first(p0 + rb + 1, window);
    unsigned qf[KT][4];
    bool fits = true;  // whether this thread's operands passed the f16 guard
    #pragma unroll
    for (int kt = 0; kt < KT; kt++) {
        #pragma unroll
        for (int half = 0; half < 2; half++) {
            int col = h * HD + kt * 16 + half * 8 + t4 * 2;
            float2 va = ra < rows ? *(const float2*)(q + (long)ra * qd + col) : make_float2(0.f, 0.f);
            float2 vb = rb < rows ? *(const float2*)(q + (long)rb * qd + col) : make_float2(0.f, 0.f);
            va = make_float2(va.x * scale, va.y * scale);
            vb = make_float2(vb.x * scale, vb.y * scale);
            fits &= in_f16(va.x) & in_f16(va.y) & in_f16(vb.x) & in_f16(vb.y);
            qf[kt][2 * half] = pack_h2(va.x, va.y);
            qf[kt][2 * half + 1] = pack_h2(vb.x, vb.y);
        }
    }
    float o[DT][4];
    #pragma unroll
    for (int dt = 0; dt < DT; dt++) o[dt][0] = o[dt][1] = o[dt][2] = o[dt][3] = 0.f;
    float m[2] = {-__int_as_float(0x7f800000), -__int_as_float(0x7f800000)}, l[2] = {0.f, 0.f};
    // A thread's 4-value pieces of a key chunk's K and V (piece e: key e / (HD / 4), values
    // from 4 (e % (HD / 4))), the next chunk's loaded while this one is scored.
    constexpr int PIECES = 32 * HD / 4 / (128 * OS);
    uint2 kn[PIECES], vn[PIECES];
    auto fetch = [&](int t0) {
        #pragma unroll
        for (int i = 0; i < PIECES; i++) {
            int e = tid + i * 128 * OS, j = e / (HD / 4), c = (e % (HD / 4)) * 4;
            bool ok = t0 + j <= last;
            long off = (long)(t0 + j) * kvd + kvh * HD + c;
            kn[i] = ok ? *(const uint2*)(kc + off) : make_uint2(0u, 0u);
            vn[i] = ok ? *(const uint2*)(vc + off) : make_uint2(0u, 0u);
        }
    };
    fetch(t_first);
    for (int t0 = t_first; t0 <= last; t0 += 32) {
        // Every warp is done with the previous chunk.
        __syncthreads();
        #pragma unroll
        for (int i = 0; i < PIECES; i++) {
            int e = tid + i * 128 * OS, j = e / (HD / 4), c = (e % (HD / 4)) * 4;
            *(uint2*)(ks + j * KS + c) = kn[i];
            *(uint2*)(vs + j * KS + c) = vn[i];
        }
        __syncthreads();
        if (t0 + 32 <= last) fetch(t0 + 32);
        // S (16 rows x 32 keys) in four 8-key tiles: [tile][0, 1] row ra, [2, 3] row rb.
        float s[4][4];
        #pragma unroll
        for (int nt = 0; nt < 4; nt++) {
            s[nt][0] = s[nt][1] = s[nt][2] = s[nt][3] = 0.f;
            const unsigned short* kr = ks + (nt * 8 + g) * KS + t4 * 2;
            #pragma unroll
            for (int kt = 0; kt < KT; kt++) mma_f16(s[nt], qf[kt], *(const unsigned*)(kr + kt * 16), *(const unsigned*)(kr + kt * 16 + 8));
        }
        float mx[2] = {m[0], m[1]};
        #pragma unroll
        for (int nt = 0; nt < 4; nt++) {
            #pragma unroll
            for (int e = 0; e < 4; e++) {
                int key = t0 + nt * 8 + t4 * 2 + (e & 1);
                if (key > p0 + (e < 2 ? ra : rb) || (WINDOWED && key < (e < 2 ? first_a : first_b))) s[nt][e] = -__int_as_float(0x7f800000);
                mx[e >> 1] = fmaxf(mx[e >> 1], s[nt][e]);
            }
        }
        float corr[2], sum[2] = {0.f, 0.f};
        #pragma unroll
        for (int i = 0; i < 2; i++) {
            mx[i] = fmaxf(mx[i], __shfl_xor_sync(0xffffffffu, mx[i], 1));
            mx[i] = fmaxf(mx[i], __shfl_xor_sync(0xffffffffu, mx[i], 2));
            corr[i] = WINDOWED ? rescale_weight(m[i], mx[i]) : expf(m[i] - mx[i]);  // a window's row may see none of a chunk
            m[i] = mx[i];
        }
        #pragma unroll
        for (int nt = 0; nt < 4; nt++) {
            #pragma unroll
            for (int e = 0; e < 4; e++) {
                s[nt][e] = WINDOWED && s[nt][e] == -__int_as_float(0x7f800000) ? 0.f : expf(s[nt][e] - mx[e >> 1]);
                sum[e >> 1] += s[nt][e];
            }
        }
        l[0] = l[0] * corr[0] + sum[0];
        l[1] = l[1] * corr[1] + sum[1];
        #pragma unroll
        for (int dt = 0; dt < DT; dt++) {
            o[dt][0] *= corr[0];
            o[dt][1] *= corr[0];
            o[dt][2] *= corr[1];
            o[dt][3] *= corr[1];
        }
        // O += P . V, 16 keys a step: S's C fragments are P's A fragments.
        #pragma unroll
        for (int kk = 0; kk < 2; kk++) {
            unsigned pa[4] = {pack_h2(s[2 * kk][0], s[2 * kk][1]), pack_h2(s[2 * kk][2], s[2 * kk][3]), pack_h2(s[2 * kk + 1][0], s[2 * kk + 1][1]), pack_h2(s[2 * kk + 1][2], s[2 * kk + 1][3])};
            #pragma unroll
            for (int dt = 0; dt < DT; dt++) {
                unsigned b0, b1;
                ldmatrix_x2_trans(b0, b1, vs + (kk * 16 + (lane & 15)) * KS + (d0 + dt) * 8);
                mma_f16(o[dt], pa, b0, b1);
            }
        }
    }
    #pragma unroll
    for (int i = 0; i < 2; i++) {
        l[i] += __shfl_xor_sync(0xffffffffu, l[i], 1);
        l[i] += __shfl_xor_sync(0xffffffffu, l[i], 2);
    }
    if (!fits) *bad = 1u;
    // Row r's values at dimensions dc, dc + 1 (max mr, sum of exps lr): into out where its
    // context is one piece (the first block's), else as the piece's partial where the row
    // sees some of its keys (a row that sees none holds no numbers).
    auto emit = [&](int r, int dc, float x0, float x1, float mr, float lr) {
        int n = p0 + r + 1;
        if (r >= rows) return;
        if (span == 0 || n <= span) {
            if (pz == 0) *(float2*)(out + (long)r * qd + h * HD + dc) = make_float2(x0 / lr, x1 / lr);
            return;
        }
        if (pz >= (n + span - 1) / span || pz < att_first(n, window) / span) return;
        float* pp = part + (((long)r * n_head + h) * part_stride + pz) * (HD + 2);
        *(float2*)(pp + dc) = make_float2(x0, x1);
        if (dc == 0) {
            pp[HD] = mr;
            pp[HD + 1] = lr;
        }
    };
    #pragma unroll
    for (int dt = 0; dt < DT; dt++) {
        int dc = (d0 + dt) * 8 + t4 * 2;
        emit(ra, dc, o[dt][0], o[dt][1], m[0], l[0]);
        emit(rb, dc, o[dt][2], o[dt][3], m[1], l[1]);
    }
}

// q, out (rows, n_head * HD); bad (1); window as the split kernel's (read by the
// flash_window_h* kernels only). span: 0, or the keys of a piece (a multiple of 32): block
// (h, tile, z) then takes the tile's keys in [z span, z span + span), and a row whose
// context spans pieces leaves each piece's partial in part (rows, n_head, part_stride,
// HD + 2: the split kernel's layout) for attention_merge. Grid (n_head, rows / 64 rounded
// up, pieces), 128 OS threads.
#define FLASH_ROWS(NAME, HD, OS, WINDOWED)                                                                            \
    extern "C" __global__ void __launch_bounds__(128 * OS) NAME##HD(const float* q, const kv_t* kc, const kv_t* vc,    \
            float* out, float* part, int n_head, int n_head_kv, const int* pos, float scale, int rows, int window,   \
            int span, int part_stride, unsigned int* bad) {                                                          \
        flash_rows<HD, OS, WINDOWED>(q, kc, vc, out, part, n_head, n_head_kv, pos, scale, rows, window, span, part_stride, bad); \
    }
FLASH_ROWS(flash_rows_h, 64, 1, false) FLASH_ROWS(flash_rows_h, 128, 1, false) FLASH_ROWS(flash_rows_h, 256, 2, false)
FLASH_ROWS(flash_window_h, 64, 1, true) FLASH_ROWS(flash_window_h, 128, 1, true) FLASH_ROWS(flash_window_h, 256, 2, true)
