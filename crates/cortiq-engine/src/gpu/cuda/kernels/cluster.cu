// Every layer of a small model's decode token in one launch: one thread-block cluster of
// CL_BLOCKS blocks (sm_90; host: `cluster.rs`) walks the layers in five stages each, (A) norm,
// Q / K / V and RoPE, (B) attention over a share of the positions, (C) the heads' merge, the
// o projection and the residual, (D) norm, gate / up and SiLU, (E) down and the residual.
// Between stages the blocks trade vectors through distributed shared memory instead of
// kernel boundaries: each block stores its share of the stage's output into every block's
// inbox by st.async, which counts the bytes on the receiving block's mbarrier, so a block
// waits only for the data it needs (the probe: 0.25 us a stage over the loop's own cost,
// against ~0.8 for a cluster barrier and a global round trip; NOTES.md, session 35). The weights a block's next stage reads (and the K / V rows of
// its positions) go into shared memory by bulk copies one stage ahead, since they do not
// depend on the token. Each inbox holds one layer's vector: its next write comes after the
// receiver has sent a later stage's share, which follows its reading.
#define CL_BLOCKS 16
#define CL_THREADS 512
#define CL_WARPS (CL_THREADS / 32)
#define CL_MAX_PIECES 8
#define CL_SHAPE_BYTES 64

// One layer's tensors (host: `cluster.rs` ClusterLayer, the same layout).
struct ClusterLayer {
    const unsigned char* w[7];  // q, k, v, o, gate, up, down (planar)
    int a_off[7];               // their scale regions (u32 words)
    int pad;
    const float* attn_norm;
    const float* ffn_norm;
    kv_t* kc;  // (capacity, n_head_kv * head_dim) this layer's K mirror
    kv_t* vc;
};

// The model's geometry and the token's place (one struct so the launch takes few arguments).
struct ClusterShape {
    int n_layer, d, n_head, n_head_kv, head_dim, ff, rot, neox;
    float base, eps, scale;
    int slot_bytes;  // one prefetch slot (host: `cluster::plan`)
    int kv_cap;      // K / V positions a slot holds
};

// attend_rows' K / V reads: four values at p (16-byte aligned floats, 8-byte aligned f16),
// and one value, as floats.
__device__ __forceinline__ float4 cl_load4(const float* p) { return *(const float4*)p; }
__device__ __forceinline__ float4 cl_load4(const kv_t* p) { return kv_load4(p); }
__device__ __forceinline__ float cl_value(float v) { return v; }
__device__ __forceinline__ float cl_value(kv_t v) { return h2f(v); }

__device__ __forceinline__ unsigned cl_smem(const void* p) { return (unsigned)__cvta_generic_to_shared(p); }
__device__ __forceinline__ int cl_rank() {
    unsigned r;
    asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(r));
    return (int)r;
}
// Every thread of every block of the cluster (release / acquire at cluster scope).
__device__ __forceinline__ void cl_sync() { asm volatile("barrier.cluster.arrive.aligned;\n\tbarrier.cluster.wait.aligned;" ::: "memory"); }
__device__ __forceinline__ void cl_mbar_init(unsigned long long* bar, unsigned count) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(cl_smem(bar)), "r"(count) : "memory");
}
// This thread's arrival at `bar`, raising the bytes its phase waits for by `bytes`.
__device__ __forceinline__ void cl_mbar_expect(unsigned long long* bar, unsigned bytes) {
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(cl_smem(bar)), "r"(bytes) : "memory");
}
// Wait until the phase of `bar` with this parity has completed (acquiring the cluster's writes).
__device__ __forceinline__ void cl_mbar_wait(unsigned long long* bar, unsigned parity) {
    asm volatile(
        "{\n\t.reg .pred done;\n\tcl_wait_%=:\n\t"
        "mbarrier.try_wait.parity.acquire.cluster.shared::cta.b64 done, [%0], %1;\n\t"
        "@!done bra cl_wait_%=;\n\t}" ::"r"(cl_smem(bar)), "r"(parity) : "memory");
}
// Bulk copy of `bytes` (a multiple of 16, both ends 16-aligned) into this block's shared memory.
__device__ __forceinline__ void cl_bulk(void* dst, const void* src, unsigned bytes, unsigned long long* bar) {
    asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];" ::"r"(cl_smem(dst)), "l"(src), "r"(bytes), "r"(cl_smem(bar)) : "memory");
}
// Four floats into block `rank`'s copy of the 16-byte-aligned shared word `local`, counted on
// its copy of `bar`.
__device__ __forceinline__ void cl_send4(float* local, unsigned long long* bar, unsigned rank, float4 v) {
    unsigned ra, rb;
    asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(ra) : "r"(cl_smem(local)), "r"(rank));
    asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(rb) : "r"(cl_smem(bar)), "r"(rank));
    asm volatile("st.async.shared::cluster.mbarrier::complete_tx::bytes.v4.b32 [%0], {%1, %2, %3, %4}, [%5];" ::"r"(ra), "r"(__float_as_uint(v.x)), "r"(__float_as_uint(v.y)),
                 "r"(__float_as_uint(v.z)), "r"(__float_as_uint(v.w)), "r"(rb)
                 : "memory");
}

// n floats of `src` (n a multiple of 4) stored at offset `at` (a multiple of 4) of inbox
// `box` in every block of the cluster, counted on each block's `bar`.
__device__ void cl_gather_send(const float* src, int n, float* box, int at, unsigned long long* bar) {
    int n4 = n >> 2;
    for (int e = threadIdx.x; e < n4 * CL_BLOCKS; e += CL_THREADS) {
        int b = e / n4, i = e % n4;
        cl_send4(box + at + 4 * i, bar, b, ((const float4*)src)[i]);
    }
}

// Rows [r0, r0 + rows) of a planar weight as one stage reads them from a prefetch slot.
struct Piece {
    const unsigned char* w;
    int a_off, r0, rows, units;
    int pay_at, sc_at, sc_shift;  // bytes into the slot: payload, the scales' 16-byte copy, the first scale in it
};

template <int K> __device__ __forceinline__ int pay_bytes_per_unit() { return K == 2 ? 32 : 16; }
template <int K> __device__ __forceinline__ int scale_bytes_per_unit() { return K == 1 ? 4 : 2; }

// Lay out piece p at byte `at` of a slot; returns the byte after it.
template <int K> __device__ int piece_place(Piece& p, int at) {
    long u0 = (long)p.r0 * p.units, nu = (long)p.rows * p.units;
    long sb = (long)p.a_off * 4 + u0 * scale_bytes_per_unit<K>();
    p.pay_at = at;
    at += (int)(nu * pay_bytes_per_unit<K>());
    p.sc_at = at;
    p.sc_shift = (int)(sb & 15);
    at += (int)((p.sc_shift + nu * scale_bytes_per_unit<K>() + 15) & ~15L);
    return at;
}

// Thread 0: piece p's payload and scales copied into the slot.
template <int K> __device__ void piece_copy(const Piece& p, char* slot, unsigned long long* bar) {
    long u0 = (long)p.r0 * p.units, nu = (long)p.rows * p.units;
    long sb = (long)p.a_off * 4 + u0 * scale_bytes_per_unit<K>();
    if (nu == 0) return;
    cl_bulk(slot + p.pay_at, p.w + u0 * pay_bytes_per_unit<K>(), (unsigned)(nu * pay_bytes_per_unit<K>()), bar);
    cl_bulk(slot + p.sc_at, p.w + (sb & ~15L), (unsigned)((p.sc_shift + nu * scale_bytes_per_unit<K>() + 15) & ~15L), bar);
}

// out[r] = row r of the piece . the staged x (cols values), r < p.rows; R rows a warp at a time.
template <int K, int R> __device__ void piece_rows(const Piece& p, const char* slot, const int* staged, int cols, float* out) {
    int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    const uint4* pay = (const uint4*)(slot + p.pay_at);
    const char* sc = slot + p.sc_at + p.sc_shift;
    for (int r0 = warp * R; r0 < p.rows; r0 += CL_WARPS * R) {
        float acc[R];
        #pragma unroll
        for (int i = 0; i < R; i++) acc[i] = 0.f;
        for (int u = lane; u < p.units; u += 32) {
            #pragma unroll
            for (int i = 0; i < R; i++) {
                long iu = (long)min(r0 + i, p.rows - 1) * p.units + u;
                Unit w;
                if (K == 2) {
                    w.a = pay[2 * iu];
                    w.b = pay[2 * iu + 1];
                } else {
                    w.a = pay[iu];
                }
                w.s = K == 1 ? ((const unsigned int*)sc)[iu] : (unsigned int)((const unsigned short*)sc)[iu];
                acc[i] += unit_dot<K>(w, staged, cols, u);
            }
        }
        #pragma unroll
        for (int i = 0; i < R; i++) acc[i] = warp_sum(acc[i]);
        if (lane == 0) {
            #pragma unroll
            for (int i = 0; i < R; i++)
                if (r0 + i < p.rows) out[r0 + i] = acc[i];
        }
    }
}

// One block's share of n items over the cluster's blocks, a multiple of 4 (host: `share`).
__device__ __forceinline__ int cl_share_len(int n) { return ((n + CL_BLOCKS - 1) / CL_BLOCKS + 3) & ~3; }

// Shares of n items over the cluster's blocks: block b takes [lo, hi).
__device__ __forceinline__ void cl_share(int n, int b, int& lo, int& hi) {
    int per = cl_share_len(n);
    lo = min(n, b * per);
    hi = min(n, lo + per);
}

// The five stages' inboxes (floats, each 16-byte aligned) and their mbarriers.
enum { BOX_QKV, BOX_PART, BOX_XO, BOX_H, BOX_XD, BOXES };

// Stage timeline (profiling, with the block timeline's `CMF_CUDA_DEFINES=CORTIQ_TRACE`):
// thread 0 of every block appends a record a stage: (8 << 48 | rank << 32 | job, globaltimer
// ns at the stage's start, then ns from the start (16 bits each, capped) to: the next stage's
// copies issued | this stage's slot ready << 16 | its inbox ready << 32 | its input staged
// << 48, and its dot products done | its output sent << 16 | its end << 32). A mark a stage
// does not reach reads as the one before it. `bench/cluster_timeline.py` sums them.
#ifdef CORTIQ_TRACE
struct StageMarks {
    unsigned long long begin, issued, slot, box, staged, dotted, sent;
    __device__ void mark(unsigned long long& t) {
        if (threadIdx.x == 0) t = global_ns();
    }
    __device__ void record(int rank, int job) {
        if (threadIdx.x != 0) return;
        unsigned long long end = global_ns(), last = begin, d[7];
        unsigned long long at[7] = {issued, slot, box, staged, dotted, sent, end};
        for (int i = 0; i < 7; i++) {
            last = at[i] ? at[i] : last;
            d[i] = min(last - begin, 65535ull);
        }
        trace_append(make_ulonglong4(8ull << 48 | (unsigned long long)rank << 32 | (unsigned)job, begin, d[0] | d[1] << 16 | d[2] << 32 | d[3] << 48,
                                     d[4] | d[5] << 16 | d[6] << 32));
    }
};
#define CL_MARK(m, t) (m).mark((m).t)
#else
struct StageMarks {};
#define CL_MARK(m, t)
#endif

template <int K, int HD> struct ClusterDecoder {
    static constexpr int DPL = HD / 32;  // head dimensions a lane
    const ClusterLayer* layers;  // (n_layer) the table's rows, copied into shared memory after the slots
    ClusterShape c;
    int rank, pos, n;
    int qd, kvd, slabs, part_w;
    // Shared memory: the residual, the staged row, the norm weights, rows out, attention
    // scratch, inboxes, two prefetch slots.
    float* x;        // (d) the residual entering the stage
    int* staged;     // staged_stride(max(d, qd, ff)) bytes
    float* rows;     // (max rows a block computes in a stage)
    float* att;      // (qd) merged attention output
    float* box[BOXES];
    char* slot[2];
    unsigned long long* box_bar;   // [BOXES]
    unsigned long long* slot_bar;  // [2]
    unsigned long long* kv_bar;    // stage B's copies past the prefetched rows
    int norm_at[2];                // where a slot holds the stage's norm weights (stages A, D)
    Piece pieces[2][CL_MAX_PIECES];
    int npieces[2];
    int kv_lo[2], kv_hi[2];  // the K / V positions a slot holds (stage B)
    StageMarks marks;        // this stage's timeline (CORTIQ_TRACE only)

    __device__ int box_floats(int b) const {
        return b == BOX_QKV ? qd + 2 * kvd : b == BOX_PART ? CL_BLOCKS * c.n_head * part_w : b == BOX_H ? c.ff : c.d;
    }

    // Slab sl of stage A (head-wide row runs of Q, then K, then V): its tensor t (0 q, 1 k,
    // 2 v) and head h.
    __device__ void slab_of(int sl, int& t, int& h) const {
        t = sl < c.n_head ? 0 : (sl < c.n_head + c.n_head_kv ? 1 : 2);
        h = t == 0 ? sl : (t == 1 ? sl - c.n_head : sl - c.n_head - c.n_head_kv);
    }

    // The positions block `rank` attends to: [lo, hi) of n.
    __device__ void positions(int& lo, int& hi) const {
        int per = (n + CL_BLOCKS - 1) / CL_BLOCKS;
        lo = min(n, rank * per);
        hi = min(n, lo + per);
    }

    // Thread 0: lay out what job j (layer j / 5, stage j % 5) reads from slot j & 1 and start
    // copying it (the other threads read the layout after the barrier that ends a stage).
    __device__ void prefetch(int j) {
        if (threadIdx.x != 0) return;
        int s = j & 1, layer = j / 5, stage = j % 5;
        int np = 0, at = 0;
        kv_lo[s] = kv_hi[s] = 0;
        norm_at[s] = -1;
        if (layer < c.n_layer) {
            const ClusterLayer& L = layers[layer];
            int units = c.d >> 5;
            if (stage == 0) {
                for (int sl = rank; sl < slabs; sl += CL_BLOCKS) {
                    int t, h;
                    slab_of(sl, t, h);
                    pieces[s][np] = Piece{L.w[t], L.a_off[t], h * HD, HD, units, 0, 0, 0};
                    at = piece_place<K>(pieces[s][np++], at);
                }
                norm_at[s] = at;
                at += 4 * c.d;
            } else if (stage == 1) {
                int lo, hi;
                positions(lo, hi);
                kv_lo[s] = lo;
                kv_hi[s] = min(hi, min(pos, lo + c.kv_cap));  // rows before pos; the new one comes by inbox
            } else if (stage == 2 || stage == 4) {
                int lo, hi;
                cl_share(c.d, rank, lo, hi);
                pieces[s][np] = Piece{L.w[stage == 2 ? 3 : 6], L.a_off[stage == 2 ? 3 : 6], lo, hi - lo, (stage == 2 ? qd : c.ff) >> 5, 0, 0, 0};
                at = piece_place<K>(pieces[s][np++], at);
            } else {
                int lo, hi;
                cl_share(c.ff, rank, lo, hi);
                for (int t = 4; t <= 5; t++) {
                    pieces[s][np] = Piece{L.w[t], L.a_off[t], lo, hi - lo, units, 0, 0, 0};
                    at = piece_place<K>(pieces[s][np++], at);
                }
                norm_at[s] = at;
                at += 4 * c.d;
            }
        }
        npieces[s] = np;
        long bytes = at;
        if (kv_hi[s] > kv_lo[s]) bytes = 2L * (kv_hi[s] - kv_lo[s]) * kvd * (long)sizeof(kv_t);
        cl_mbar_expect(&slot_bar[s], (unsigned)bytes);
        for (int i = 0; i < np; i++) piece_copy<K>(pieces[s][i], slot[s], &slot_bar[s]);
        if (norm_at[s] >= 0) cl_bulk(slot[s] + norm_at[s], stage == 0 ? layers[layer].attn_norm : layers[layer].ffn_norm, 4 * c.d, &slot_bar[s]);
        if (kv_hi[s] > kv_lo[s]) {
            const ClusterLayer& L = layers[layer];
            unsigned b = (unsigned)((kv_hi[s] - kv_lo[s]) * kvd * sizeof(kv_t));
            cl_bulk(slot[s], L.kc + (long)kv_lo[s] * kvd, b, &slot_bar[s]);
            cl_bulk(slot[s] + b, L.vc + (long)kv_lo[s] * kvd, b, &slot_bar[s]);
        }
    }

    // Thread 0 announces the bytes of every inbox phase of layer `layer` (one arrival each).
    __device__ void expect_layer() {
        if (threadIdx.x != 0) return;
        for (int b = 0; b < BOXES; b++) cl_mbar_expect(&box_bar[b], (unsigned)box_floats(b) * 4);
    }

    // Stage A: x RMS-normed, its Q / K / V slabs with RoPE; Q and the new K / V rows to every
    // block, K / V also into this layer's mirror at pos.
    __device__ void stage_qkv(const ClusterLayer& L, int s) {
        stage_x(K, x, (const float*)(slot[s] + norm_at[s]), c.eps, c.d, staged);
        CL_MARK(marks, staged);
        int half = c.rot >> 1;
        for (int i = 0; i < npieces[s]; i++) {
            const Piece& p = pieces[s][i];
            piece_rows<K, 4>(p, slot[s], staged, c.d, rows);
            __syncthreads();
            CL_MARK(marks, dotted);
            int t, h;
            slab_of(rank + i * CL_BLOCKS, t, h);
            float* out = att;  // scratch: the slab after RoPE
            for (int j = threadIdx.x; j < HD / 2; j += CL_THREADS) {
                int a, b;
                rope_dims(j, c.rot, c.neox, a, b);
                float y0 = rows[a], y1 = rows[b];
                if (t < 2 && j < half) {
                    float sn, cs;
                    rope_rotation(pos, j, c.base, c.rot, sn, cs);
                    float r0 = y0 * cs - y1 * sn, r1 = y0 * sn + y1 * cs;
                    y0 = r0;
                    y1 = r1;
                }
                if (t > 0) {
                    // The new K / V row as the mirror holds it, for stage B's inbox too.
                    kv_t* mirror = (t == 1 ? L.kc : L.vc) + (long)pos * kvd + h * HD;
                    mirror[a] = f2h(y0);
                    mirror[b] = f2h(y1);
                    y0 = h2f(mirror[a]);
                    y1 = h2f(mirror[b]);
                }
                out[a] = y0;
                out[b] = y1;
            }
            __syncthreads();
            int at = t == 0 ? h * HD : (t == 1 ? qd + h * HD : qd + kvd + h * HD);
            cl_gather_send(out, HD, box[BOX_QKV], at, &box_bar[BOX_QKV]);
            __syncthreads();
        }
        CL_MARK(marks, sent);
    }

    // Stage B: every head over this block's positions as an online softmax (the slot's K / V
    // rows, then rows past the slot's capacity copied into it a slot at a time, then the new
    // row from the inbox); its (max, sum, V sums) to every block. Warp w takes heads w, w + 16, ...
    __device__ void stage_attention(const ClusterLayer& L, int s, unsigned& kv_phase) {
        const float* qkv = box[BOX_QKV];
        int lo, hi;
        positions(lo, hi);
        int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
        float* part = rows;  // (n_head, part_w) this block's partials: V sums, max, sum, 2 pad
        for (int h = warp; h < c.n_head; h += CL_WARPS)
            for (int d = lane; d < part_w; d += 32) part[h * part_w + d] = d == HD ? -__int_as_float(0x7f800000) : 0.f;
        __syncthreads();
        CL_MARK(marks, staged);
        kv_t* ks = (kv_t*)slot[s];
        int pre = kv_hi[s] - kv_lo[s], old_hi = min(hi, pos);
        if (pre > 0) attend_rows(ks, ks + (long)pre * kvd, pre, qkv, part);
        for (int first = pre > 0 ? kv_hi[s] : old_hi; first < old_hi; first += c.kv_cap) {
            int cnt = min(old_hi, first + c.kv_cap) - first;
            unsigned b = (unsigned)(cnt * kvd * sizeof(kv_t));
            if (threadIdx.x == 0) {
                cl_mbar_expect(kv_bar, 2 * b);
                cl_bulk(ks, L.kc + (long)first * kvd, b, kv_bar);
                cl_bulk(ks + (long)cnt * kvd, L.vc + (long)first * kvd, b, kv_bar);
            }
            cl_mbar_wait(kv_bar, kv_phase & 1);
            kv_phase++;
            attend_rows(ks, ks + (long)cnt * kvd, cnt, qkv, part);
        }
        if (pos >= lo && pos < hi) attend_rows(qkv + qd, qkv + qd + kvd, 1, qkv, part);
        CL_MARK(marks, dotted);
        cl_gather_send(part, c.n_head * part_w, box[BOX_PART], rank * c.n_head * part_w, &box_bar[BOX_PART]);
        CL_MARK(marks, sent);
    }

    // Scores of positions [first, first + cnt) (K rows ks, V rows vs, kvd values apart: the
    // mirror's f16 copied into a slot, or the new row's floats in the inbox) for every head,
    // folded into its running (max, sum, V sums) in part. Ends with a barrier.
    template <typename T>
    __device__ void attend_rows(const T* ks, const T* vs, int cnt, const float* qkv, float* part) {
        int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, group = c.n_head / c.n_head_kv;
        const float ninf = -__int_as_float(0x7f800000);
        for (int h = warp; h < c.n_head; h += CL_WARPS) {
            int g = h / group;
            const float4* q4 = (const float4*)(qkv + h * HD);
            float* pp = part + h * part_w;
            float m = pp[HD], sum = pp[HD + 1];
            float o[DPL];
            #pragma unroll
            for (int k = 0; k < DPL; k++) o[k] = pp[lane + 32 * k];
            for (int r0 = 0; r0 < cnt; r0 += 32) {
                // Lane l scores position r0 + l, reading its K row's float4s from column l.
                float sc = ninf;
                if (r0 + lane < cnt) {
                    const T* k4 = ks + (long)(r0 + lane) * kvd + g * HD;
                    float a = 0.f;
                    #pragma unroll
                    for (int i = 0; i < HD / 4; i++) {
                        int cidx = (i + lane) & (HD / 4 - 1);
                        float4 kv = cl_load4(k4 + 4 * cidx), qv = q4[cidx];
                        a += kv.x * qv.x + kv.y * qv.y + kv.z * qv.z + kv.w * qv.w;
                    }
                    sc = a * c.scale;
                }
                float mt = fmaxf(m, warp_max(sc));
                float r = m == mt ? 1.f : expf(m - mt);
                float e = r0 + lane < cnt ? expf(sc - mt) : 0.f;
                sum = sum * r + warp_sum(e);
                #pragma unroll
                for (int k = 0; k < DPL; k++) o[k] *= r;
                int top = min(32, cnt - r0);
                for (int j = 0; j < top; j++) {
                    float ej = __shfl_sync(0xffffffffu, e, j);
                    const T* vr = vs + (long)(r0 + j) * kvd + g * HD;
                    #pragma unroll
                    for (int k = 0; k < DPL; k++) o[k] += ej * cl_value(vr[lane + 32 * k]);
                }
                m = mt;
            }
            #pragma unroll
            for (int k = 0; k < DPL; k++) pp[lane + 32 * k] = o[k];
            if (lane == 0) {
                pp[HD] = m;
                pp[HD + 1] = sum;
                pp[HD + 2] = pp[HD + 3] = 0.f;
            }
        }
        __syncthreads();
    }

    // Stage C: the blocks' partials merged into the attention output, its o rows of this
    // block's share added to the residual, the new residual rows to every block.
    __device__ void stage_o(int s) {
        const float* part = box[BOX_PART];
        for (int e = threadIdx.x; e < qd; e += CL_THREADS) {
            int h = e / HD, d = e % HD;
            float top = -__int_as_float(0x7f800000);
            for (int b = 0; b < CL_BLOCKS; b++) top = fmaxf(top, part[(b * c.n_head + h) * part_w + HD]);
            float total = 0.f, o = 0.f;
            for (int b = 0; b < CL_BLOCKS; b++) {
                const float* pp = part + (b * c.n_head + h) * part_w;
                float w = pp[HD] == top ? 1.f : expf(pp[HD] - top);
                total += w * pp[HD + 1];
                o += w * pp[d];
            }
            att[e] = o / total;
        }
        __syncthreads();
        stage_x(K, att, nullptr, 0.f, qd, staged);
        CL_MARK(marks, staged);
        residual_rows(pieces[s][0], s, qd, BOX_XO);
    }

    // The piece's rows (this block's share of the residual) . the staged row, added to x,
    // to inbox `bx` of every block.
    __device__ void residual_rows(const Piece& p, int s, int cols, int bx) {
        piece_rows<K, 4>(p, slot[s], staged, cols, rows);
        __syncthreads();
        CL_MARK(marks, dotted);
        for (int r = threadIdx.x; r < p.rows; r += CL_THREADS) rows[r] += x[p.r0 + r];
        __syncthreads();
        cl_gather_send(rows, p.rows, box[bx], p.r0, &box_bar[bx]);
        CL_MARK(marks, sent);
    }

    // Stage D: x RMS-normed, gate and up rows of this block's share of the hidden values,
    // silu(gate) * up to every block.
    __device__ void stage_glu(const ClusterLayer& L, int s) {
        stage_x(K, x, (const float*)(slot[s] + norm_at[s]), c.eps, c.d, staged);
        CL_MARK(marks, staged);
        const Piece& g = pieces[s][0];
        piece_rows<K, 4>(g, slot[s], staged, c.d, rows);
        piece_rows<K, 4>(pieces[s][1], slot[s], staged, c.d, rows + g.rows);
        __syncthreads();
        CL_MARK(marks, dotted);
        for (int i = threadIdx.x; i < g.rows; i += CL_THREADS) rows[i] = silu_times(rows[i], rows[g.rows + i]);
        __syncthreads();
        cl_gather_send(rows, g.rows, box[BOX_H], g.r0, &box_bar[BOX_H]);
        CL_MARK(marks, sent);
    }

    // Stage E: the hidden row staged, this block's down rows added to the residual, to
    // every block.
    __device__ void stage_down(int s) {
        stage_x(K, box[BOX_H], nullptr, 0.f, c.ff, staged);
        CL_MARK(marks, staged);
        residual_rows(pieces[s][0], s, c.ff, BOX_XD);
    }

    // x = the inbox's vector (d floats).
    __device__ void take_x(const float* src) {
        for (int i = threadIdx.x; i < c.d; i += CL_THREADS) x[i] = src[i];
        __syncthreads();
    }
};

// Rounding of the decoder's shared layout below (host: `cluster::plan` makes the same sums).
__device__ __forceinline__ int cl_align(int b) { return (b + 15) & ~15; }

template <int K, int HD>
__device__ void cluster_layers(const unsigned char* table, const int* pos_ptr, float* xg) {
    const ClusterShape c = *(const ClusterShape*)table;
    const ClusterLayer* layers = (const ClusterLayer*)(table + CL_SHAPE_BYTES);
    extern __shared__ __align__(16) unsigned char cl_sm[];
    __shared__ unsigned long long bars[BOXES + 3];
    // The decoder's state is the block's, in shared memory: as a per-thread object its arrays
    // went to local memory (~1 KB a thread, 512 KB a block), which the L1 left beside ~200 KB
    // of shared memory cannot hold, so its reads went to L2 (NOTES.md, session 36).
    __shared__ ClusterDecoder<K, HD> dec;
    if (threadIdx.x == 0) {
        dec.c = c;
        dec.rank = (int)cl_rank();
        dec.qd = c.n_head * HD;
        dec.kvd = c.n_head_kv * HD;
        dec.slabs = c.n_head + 2 * c.n_head_kv;
        dec.part_w = HD + 4;
        int widest = max(c.d, max(dec.qd, c.ff));
        int rows_max = max(max(HD, cl_share_len(c.d)), max(2 * cl_share_len(c.ff), c.n_head * dec.part_w));
        unsigned char* at = cl_sm;
        dec.x = (float*)at;
        at += cl_align(4 * c.d);
        dec.staged = (int*)at;
        at += cl_align(widest + 12 * (widest >> 5));
        dec.rows = (float*)at;
        at += cl_align(4 * rows_max);
        dec.att = (float*)at;
        at += cl_align(4 * max(dec.qd, HD));
        for (int b = 0; b < BOXES; b++) {
            dec.box[b] = (float*)at;
            at += cl_align(4 * dec.box_floats(b));
        }
        dec.slot[0] = (char*)at;
        dec.slot[1] = (char*)at + c.slot_bytes;
        dec.layers = (const ClusterLayer*)(at + 2 * c.slot_bytes);  // filled below
        dec.box_bar = bars;
        dec.slot_bar = bars + BOXES;
        dec.kv_bar = bars + BOXES + 2;
        for (int b = 0; b < BOXES + 3; b++) cl_mbar_init(&bars[b], 1);
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    }
    __syncthreads();
    // The layer table in shared memory: thread 0 reads a row for each prefetch it lays out,
    // and a global read there sat on every stage's critical path.
    for (int i = threadIdx.x; i < c.n_layer * (int)(sizeof(ClusterLayer) / 8); i += CL_THREADS)
        ((unsigned long long*)dec.layers)[i] = ((const unsigned long long*)layers)[i];
    __syncthreads();
    unsigned kv_phase = 0;  // phases of dec.kv_bar completed
    // The weights of the first stage depend on nothing the kernel before writes.
    dec.prefetch(0);
    cl_sync();  // every block's barriers are set before any store reaches them
#if __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
    if (threadIdx.x == 0) {  // the position may come from the token before's pick
        dec.pos = *pos_ptr;
        dec.n = dec.pos + 1;
    }
    dec.take_x(xg);  // ends with a barrier
    for (int layer = 0; layer < c.n_layer; layer++) {
        const ClusterLayer& L = dec.layers[layer];
        unsigned phase = layer & 1;
        dec.expect_layer();
        for (int stage = 0; stage < 5; stage++) {
            int j = layer * 5 + stage, s = j & 1;
#ifdef CORTIQ_TRACE
            if (threadIdx.x == 0) dec.marks = StageMarks{};
#endif
            CL_MARK(dec.marks, begin);
            dec.prefetch(j + 1);
            CL_MARK(dec.marks, issued);
            cl_mbar_wait(&dec.slot_bar[s], (j >> 1) & 1);
            CL_MARK(dec.marks, slot);
            if (stage > 0) cl_mbar_wait(&dec.box_bar[stage - 1], phase);  // stage k reads inbox k - 1
            CL_MARK(dec.marks, box);
            if (stage == 0) {
                dec.stage_qkv(L, s);
            } else if (stage == 1) {
                dec.stage_attention(L, s, kv_phase);
            } else if (stage == 2) {
                dec.stage_o(s);
            } else if (stage == 3) {
                dec.take_x(dec.box[BOX_XO]);
                dec.stage_glu(L, s);
            } else {
                dec.stage_down(s);
                cl_mbar_wait(&dec.box_bar[BOX_XD], phase);
                dec.take_x(dec.box[BOX_XD]);
            }
            __syncthreads();
#ifdef CORTIQ_TRACE
            dec.marks.record(dec.rank, j);
#endif
        }
    }
    if (dec.rank == 0)
        for (int i = threadIdx.x; i < c.d; i += CL_THREADS) xg[i] = dec.x[i];
    cl_sync();  // no block leaves while a store may still reach it
}

// table: the shape (CL_SHAPE_BYTES), then a ClusterLayer a layer; xg (d): the residual after
// the embedding, replaced by the one after the last layer.
#define CLUSTER_LAYERS(K, HD)                                                                                          \
    extern "C" __global__ void __launch_bounds__(CL_THREADS, 1) cluster_layers_k##K##_h##HD(const unsigned char* table, \
            const int* pos, float* xg) {                                                                              \
        cluster_layers<K, HD>(table, pos, xg);                                                                        \
    }
#if __CUDA_ARCH__ >= 900
CLUSTER_LAYERS(0, 64) CLUSTER_LAYERS(1, 64) CLUSTER_LAYERS(2, 64) CLUSTER_LAYERS(0, 128) CLUSTER_LAYERS(1, 128) CLUSTER_LAYERS(2, 128)
#endif
