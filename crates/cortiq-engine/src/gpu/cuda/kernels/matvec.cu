// cortiq CUDA kernels, compiled at run time by NVRTC for the device's architecture.
// Weights arrive in the planar layout (gpu/planar.rs): per 32-value unit a 16-byte (Q4_0,
// Q4_1) or 32-byte (Q8_0) payload word run, scales in region `a` (offset a_off in u32
// words); F16 and F32 rows are stored raw. Each block first stages its activation row in
// shared memory: for the quantized codecs as int8 in 32-value groups (ggml's q8 rule, the
// CPU path's: d = max|x| / 127 rounded to f16, q = round-half-even(x * 127 / max)) dotted with
// __dp4a; for F16/F32 as floats. The staging can apply an RMSNorm first (x / rms(x) * nw), so
// a token graph needs no separate norm kernel. Where the kernel before wrote the row as an
// int8 image (`store_unit`, the token graph's int8 chain), the block copies that instead.

__device__ __forceinline__ float h2f(unsigned short h) {
    float f;
    asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h));
    return f;
}

// f32 -> f16 bits (round to nearest even).
__device__ __forceinline__ unsigned short f2h(float v) {
    unsigned short h;
    asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(v));
    return h;
}

// v rounded to f16 precision (round to nearest even), back as f32.
__device__ __forceinline__ float round_f16(float v) { return h2f(f2h(v)); }

// The KV mirror's element: f16 bits, as the CPU path's KvCache and llama.cpp hold K and V
// (half the bytes attention streams at long contexts).
typedef unsigned short kv_t;

// Mirror values p[0..4) (p 8-byte aligned) as they are stored; kv_float4 converts them. A
// kernel that holds loaded values in registers keeps them raw until it uses them, so the
// conversion does not wait for the load where the load was issued early (before a PDL wait,
// beside other loads): converting at the load cost llama-1b 2.4 % (NOTES.md, session 43).
__device__ __forceinline__ uint2 kv_raw4(const kv_t* p) { return *(const uint2*)p; }
__device__ __forceinline__ float4 kv_float4(uint2 u) {
    return make_float4(h2f(u.x & 0xffffu), h2f(u.x >> 16), h2f(u.y & 0xffffu), h2f(u.y >> 16));
}
__device__ __forceinline__ float4 kv_load4(const kv_t* p) { return kv_float4(kv_raw4(p)); }

// The reductions' combining rules: each with its identity.
struct SumOp {
    static __device__ __forceinline__ float id() { return 0.f; }
    static __device__ __forceinline__ float op(float a, float b) { return a + b; }
};
struct MaxOp {
    static __device__ __forceinline__ float id() { return -__int_as_float(0x7f800000); }
    static __device__ __forceinline__ float op(float a, float b) { return fmaxf(a, b); }
};

template <class Op> __device__ __forceinline__ float warp_reduce(float v) {
    for (int o = 16; o > 0; o >>= 1) v = Op::op(v, __shfl_xor_sync(0xffffffffu, v, o));
    return v;
}

// Every thread's v combined over the block (blockDim a multiple of 32, up to 1024), returned
// to all threads. Its shared buffer (one per rule) is reused by the next call, so the block
// must pass a barrier between two calls of one rule (stage_x ends with one, so once per
// stage_x is safe).
template <class Op> __device__ float block_reduce(float v) {
    __shared__ float part[32];
    v = warp_reduce<Op>(v);
    if ((threadIdx.x & 31) == 0) part[threadIdx.x >> 5] = v;
    __syncthreads();
    if (threadIdx.x < 32) {
        v = threadIdx.x < (blockDim.x >> 5) ? part[threadIdx.x] : Op::id();
        v = warp_reduce<Op>(v);
        if (threadIdx.x == 0) part[0] = v;
    }
    __syncthreads();
    return part[0];
}

__device__ __forceinline__ float warp_sum(float v) { return warp_reduce<SumOp>(v); }
__device__ __forceinline__ float warp_max(float v) { return warp_reduce<MaxOp>(v); }
__device__ float block_sum(float v) { return block_reduce<SumOp>(v); }

// Block timeline (profiling: `CMF_CUDA_DEFINES=CORTIQ_TRACE`, host `gpu/cuda/trace.rs`):
// each block of a traced decode kernel appends one record to a ring the host drains after
// every graph run: (family << 48 | SM << 32 | linear block index, globaltimer ns at entry,
// when its wait for the kernel before returned (0 where it never waited), when its last
// thread left). Families: 1 embed_row, 2 qkv_rope, 3 the split attention, 4 attention_merge,
// 5 matvec, 6 matvec_img, 7 gate_up; 8 is cluster.cu's record a stage (its own layout, its
// reader `bench/cluster_timeline.py`). Adds a barrier at each traced kernel's entry. TRACE_RING
// (records) comes from the host.
#ifdef CORTIQ_TRACE
__device__ unsigned long long cortiq_trace_count;
__device__ ulonglong4 cortiq_trace_ring[TRACE_RING];
// One record into the ring (the host drains it in write order).
__device__ __forceinline__ void trace_append(ulonglong4 record) { cortiq_trace_ring[atomicAdd(&cortiq_trace_count, 1ull) % TRACE_RING] = record; }
__shared__ unsigned long long trace_enter, trace_wait, trace_exit;
__shared__ unsigned int trace_left;
__device__ __forceinline__ unsigned long long global_ns() {
    unsigned long long t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}
// globaltimer once v is known: the read is predicated on a test of v, so it cannot be
// scheduled before the loads v comes from return (0 where v is NaN).
__device__ __forceinline__ unsigned long long global_ns_after(float v) {
    unsigned long long t;
    asm volatile("{\n\t.reg .pred nan;\n\tsetp.neu.f32 nan, %1, %1;\n\t@nan mov.u64 %0, 0;\n\t@!nan mov.u64 %0, %%globaltimer;\n\t}" : "=l"(t) : "f"(v));
    return t;
}
struct BlockTrace {
    unsigned long long family;
    __device__ explicit BlockTrace(int f) : family(f) {
        if (threadIdx.x == 0) {
            trace_enter = global_ns();
            trace_wait = trace_exit = 0ull;
            trace_left = blockDim.x;
        }
        __syncthreads();
    }
    // The last thread to leave writes the block's record.
    __device__ ~BlockTrace() {
        atomicMax(&trace_exit, global_ns());
        __threadfence_block();
        if (atomicSub(&trace_left, 1u) != 1u) return;
        __threadfence_block();
        unsigned sm;
        asm volatile("mov.u32 %0, %%smid;" : "=r"(sm));
        unsigned long long block = blockIdx.x + (unsigned long long)gridDim.x * (blockIdx.y + (unsigned long long)gridDim.y * blockIdx.z);
        trace_append(make_ulonglong4(family << 48 | (unsigned long long)sm << 32 | block, trace_enter, atomicMax(&trace_wait, 0ull), atomicMax(&trace_exit, 0ull)));
    }
};
#define TRACE_BLOCK(family) BlockTrace block_trace_(family)
// Thread 0 records timer reading t as the block's wait release (the latest call wins).
#define TRACE_WAIT_AT(t)                                \
    do {                                                \
        if (threadIdx.x == 0) atomicMax(&trace_wait, t); \
    } while (0)
#define TRACE_WAITED() TRACE_WAIT_AT(global_ns())
#else
#define TRACE_BLOCK(family)
#define TRACE_WAITED()
#endif
// Where the timeline's block time of a row kernel (`run_rows`) starts: at its wait release,
// or with CORTIQ_TRACE_LOADED when thread 0's loads of its pieces of a normed activation row
// have returned (stage_x, before the norm's reduction), with CORTIQ_TRACE_STAGED when the row
// is staged, with CORTIQ_TRACE_DOTTED when thread 0 has left its dot products (the record's
// wait field holds that time instead).
#if defined(CORTIQ_TRACE) && defined(CORTIQ_TRACE_LOADED)
#define TRACE_LOADED(v) TRACE_WAIT_AT(global_ns_after(v))
#else
#define TRACE_LOADED(v)
#endif
#ifdef CORTIQ_TRACE_STAGED
#define TRACE_STAGED() TRACE_WAITED()
#else
#define TRACE_STAGED()
#endif
#ifdef CORTIQ_TRACE_DOTTED
#define TRACE_DOTTED() TRACE_WAITED()
#else
#define TRACE_DOTTED()
#endif

// Programmatic dependent launch (compute capability 9.0+, host: `gpu/cuda/launch.rs`): wait
// until the kernel before this one on the stream has finished and its writes are visible,
// and let the kernel after this one start its blocks (they, too, wait before touching
// anything this one writes): after the wait, or with `first` before it, so the next kernel
// launches once every block of this one has entered (the row kernels: llama-8b q4_0 +1.1 %,
// NOTES.md, forty-fifth session). Everything before the call may only read memory no earlier
// kernel writes (weights, launch parameters). A no-op where the launch did not ask for
// overlap, and on older devices.
__device__ __forceinline__ void pdl_wait_then_release(bool first = false) {
#if __CUDA_ARCH__ >= 900
    if (first) asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
    asm volatile("griddepcontrol.wait;" ::: "memory");
    TRACE_WAITED();
    if (!first) asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}

// 8 floats at p (16-byte aligned) into v.
__device__ __forceinline__ void load8(const float* p, float* v) {
    float4 a = ((const float4*)p)[0], b = ((const float4*)p)[1];
    v[0] = a.x; v[1] = a.y; v[2] = a.z; v[3] = a.w; v[4] = b.x; v[5] = b.y; v[6] = b.z; v[7] = b.w;
}

// The residual stream's pending part in a token graph with the fused FFN (host: `ffn.rs`):
// `ffn_fused` adds each block's share of the down projection into xa (cols + 1 words) as
// fixed-point integers, FIX_ONE a unit, so the sum has the same bits in any order of adds;
// word cols is set nonzero where a share was not a finite number below FIX_LIMIT (every value
// then reads as NaN; a share below 2^24 is below 2^50 fixed, so up to 8192 shares of a value
// cannot overflow). embed_row zeroes it; the next output projection folds it into the stream
// and zeroes the values; qkv_rope_pend and matvec_pend stage x plus it.
#define FIX_ONE 67108864.f
#define FIX_LIMIT 16777216.f
// A fixed-point value as a float.
__device__ __forceinline__ float fix_to_float(long long v) { return __ll2float_rn(v) * (1.f / FIX_ONE); }
// NaN where xa's flag word is set (PENDING), else 0: added to each value read.
template <bool PENDING> __device__ __forceinline__ float pending_poison(const long long* xa, int cols) {
    return PENDING && xa[cols] ? __int_as_float(0x7fc00000) : 0.f;
}
__device__ __forceinline__ float pending_value(const long long* xa, int i, int cols) { return fix_to_float(xa[i]) + pending_poison<true>(xa, cols); }
// v added into value i of the pending part (xa, cols values).
__device__ __forceinline__ void add_pending(long long* xa, int i, int cols, float v) {
    if (fabsf(v) < FIX_LIMIT) atomicAdd((unsigned long long*)xa + i, (unsigned long long)__float2ll_rn(v * FIX_ONE));
    else atomicOr((unsigned long long*)xa + cols, 1ull);
}

// Piece j of x (8 floats) into v, plus the pending part where PENDING (`poison`: its
// `pending_poison`).
template <bool PENDING> __device__ __forceinline__ void load_x8(const float* x, const long long* xa, float poison, int j, float* v) {
    load8(x + 8 * j, v);
    if (PENDING) {
        const longlong2* p = (const longlong2*)(xa + 8 * j);
        #pragma unroll
        for (int k = 0; k < 4; k++) {
            longlong2 a = p[k];
            v[2 * k] += fix_to_float(a.x) + poison;
            v[2 * k + 1] += fix_to_float(a.y) + poison;
        }
    }
}

// Codec kinds shared with the host (`layout.rs`): 0 q4_0, 1 q4_1, 2 q8_0, 3 f16, 4 f32, 5 q6
// (Q6_K: its levels' low nibbles as Q4_0's payload, and a 3-word record a unit: the high 2
// bits of values 0-15 and of 16-31 (`dot_high2`), then f16 d and the int8 scales of the two
// 16-value halves), 6 q4k (Q4_K: its levels as Q4_0's payload, and a 5-word record a
// superblock of 8 units: f16 d | f16 dmin << 16, then a word per two units of their 6-bit
// scale and minimum, `sc | m << 8`, the odd unit's in the high half), 7 q5k (Q5_K: q4k's
// payload of its levels' low nibbles and records, then from word q5k_high_off(a_off) a word a
// unit of its levels' fifth bits, `dot_high1`), 8 q51 (Q5_1: Q4_1's payload of its levels'
// low nibbles and scale words, then from word q51_high_off(a_off) a word a unit of its
// levels' fifth bits, as q5k's). Quantized kinds stage x as int8, the others as floats:
// staged_bytes(kind, cols) on the host is cols + 12 * (cols / 32), or 4 * cols.
#define KIND_Q6 5
#define KIND_Q4K 6
#define KIND_Q5K 7
#define KIND_Q51 8
// Whether kind K is dotted with int8 activations; its payload words a unit (Q8_0: two);
// whether it has a scale record a unit (Q4_1, q6, q51) rather than an f16 a unit, two a word,
// and that record's words; the words a unit's ring slot holds beside its payload (q4k: its
// share of its superblock's 5, rounded up; q5k: that and its high-bit word; q51: its scale
// word and its high-bit word); whether its units are q4k's (q4k, q5k).
#define KIND_INT8(K) ((K) <= 2 || (K) == KIND_Q6 || (K) == KIND_Q4K || (K) == KIND_Q5K || (K) == KIND_Q51)
#define KIND_WORDS(K) ((K) == 2 ? 2 : 1)
#define KIND_SCALE_WORD(K) ((K) == 1 || (K) == KIND_Q6 || (K) == KIND_Q51)
#define KIND_SCALE_STRIDE(K) ((K) == KIND_Q6 ? 3 : 1)
#define KIND_RECORD(K) ((K) == KIND_Q6 ? 3 : (K) == KIND_Q5K || (K) == KIND_Q51 ? 2 : 1)
#define KIND_AFFINE_K(K) ((K) == KIND_Q4K || (K) == KIND_Q5K)

// Where a q5k matrix's high-bit words start (u32 words) from where its records start, a_off:
// a_off / 4 units (4 payload words each), 5 record words a superblock of 8, padded to a
// 16-byte word (host: `layout::high_off`).
__device__ __forceinline__ long q5k_high_off(int a_off) { return a_off + (((long)5 * (a_off >> 5) + 3) & ~3L); }
// Where a q51 matrix's high-bit words start: a_off / 4 units, a scale word each, padded to a
// 16-byte word (host: `layout::q51_high_off`, planar.rs's region c).
__device__ __forceinline__ long q51_high_off(int a_off) { return a_off + (((long)(a_off >> 2) + 3) & ~3L); }
__device__ __forceinline__ bool quantized(int kind) { return KIND_INT8(kind); }

// Passes of stage_x whose loads are issued together. Each pass holds 8 values a thread
// (and a normed row as many weights) in registers, and a row kernel's registers are set by
// this peak: at 4 the normed row kernels took 107-124 registers (2 blocks of 256 threads
// an SM), at 2 62-80, and the token decoded up to 6 % faster (NOTES.md, session 22).
#define STAGE_PASSES 2

// The q8 rule's parts, shared by every writer of a staged int8 row (stage_x, store_unit):
// the factor that takes a group's values to int8 (q = round-half-even(v * factor)) from its
// largest magnitude, and the group's scales from that magnitude, whether all its values are
// finite and the sum of its int8 values, stored as group g of `groups` (layout: stage_x's):
// d rounded to f16 (NaN for a group with a NaN or infinity), s = d * sum rounded to f16, sum.
__device__ __forceinline__ float q8_factor(float amax) { return amax != 0.f ? 127.f / amax : 0.f; }
__device__ __forceinline__ void store_group_scales(float* gd, int groups, int g, float amax, bool finite, int sum) {
    float d = amax / 127.f;
    gd[g] = finite ? round_f16(d) : __int_as_float(0x7fc00000);
    gd[groups + g] = round_f16((float)sum * d);
    ((int*)gd)[2 * groups + g] = sum;
}

// 1 / rms of x (cols floats, plus the pending part xa where PENDING; eps added to the mean
// square), for every thread of the block.
// Not inlined: stage_x calls it for rows too wide to scale in registers only, and inlined
// it raised the registers of kernels that never take it.
template <bool PENDING> __device__ __noinline__ float rms_scale(const float* x, const long long* xa, int cols, float eps) {
    float ss = 0.f, poison = pending_poison<PENDING>(xa, cols);
    for (int j = threadIdx.x; j < (cols >> 3); j += blockDim.x) {
        float v[8];
        load_x8<PENDING>(x, xa, poison, j, v);
        #pragma unroll
        for (int k = 0; k < 8; k++) ss += v[k] * v[k];
    }
    return rsqrtf(block_sum(ss) / cols + eps);
}

// Stage x (cols floats) in shared memory `sm`, RMS-normed with nw when nw is not null.
// Quantized kinds: int8 values (cols bytes), then per group d (f32), s = d * sum rounded
// to f16 (f32), sum (i32). Float kinds: the floats. Each thread takes 8-value pieces
// (4 neighbouring lanes make a 32-value group, reduced by shuffles), loading up to
// STAGE_PASSES pieces at once so their latencies overlap. A normed row that one round of
// loads holds (cols <= 8 * blockDim * STAGE_PASSES) is scaled in registers; a wider one is
// read twice, its squares summed first (measured slower where both work: NOTES.md). A NaN
// or infinity in a group makes its d NaN, so it reaches the output. Where PENDING, the row is
// x plus the pending part xa (`pending_value`). Ends with a barrier.
template <bool PENDING = false> __device__ void stage_x(int kind, const float* x, const float* nw, float eps, int cols, int* sm, const long long* xa = nullptr) {
    int pieces = cols >> 3, passes = (pieces + blockDim.x - 1) / blockDim.x;
    int groups = cols >> 5;
    float* gd = (float*)(sm + (cols >> 2));
    bool one_round = passes <= STAGE_PASSES;
    float scale = nw && !one_round ? rms_scale<PENDING>(x, xa, cols, eps) : 1.f;
    float poison = pending_poison<PENDING>(xa, cols);
    for (int p0 = 0; p0 < passes; p0 += STAGE_PASSES) {
        float v[STAGE_PASSES][8];
        #pragma unroll
        for (int p = 0; p < STAGE_PASSES; p++) {
            int j = (p0 + p) * blockDim.x + threadIdx.x;
            if (j < pieces) {
                load_x8<PENDING>(x, xa, poison, j, v[p]);
            } else {
                #pragma unroll
                for (int k = 0; k < 8; k++) v[p][k] = 0.f;
            }
        }
        if (nw) {
            float w[STAGE_PASSES][8];
            float ss = 0.f;
            #pragma unroll
            for (int p = 0; p < STAGE_PASSES; p++) {
                int j = (p0 + p) * blockDim.x + threadIdx.x;
                if (j < pieces) load8(nw + 8 * j, w[p]);
                #pragma unroll
                for (int k = 0; k < 8; k++) ss += v[p][k] * v[p][k];
            }
            TRACE_LOADED(ss);
            if (one_round) scale = rsqrtf(block_sum(ss) / cols + eps);
            #pragma unroll
            for (int p = 0; p < STAGE_PASSES; p++) {
                #pragma unroll
                for (int k = 0; k < 8; k++) v[p][k] = (p0 + p) * (int)blockDim.x + (int)threadIdx.x < pieces ? v[p][k] * scale * w[p][k] : 0.f;
            }
        }
        #pragma unroll
        for (int p = 0; p < STAGE_PASSES; p++) {
            int j = (p0 + p) * blockDim.x + threadIdx.x;
            if (!quantized(kind)) {
                if (j < pieces) {
                    ((float4*)sm)[2 * j] = make_float4(v[p][0], v[p][1], v[p][2], v[p][3]);
                    ((float4*)sm)[2 * j + 1] = make_float4(v[p][4], v[p][5], v[p][6], v[p][7]);
                }
                continue;
            }
            // Every lane takes part in the shuffles; pieces past the row hold zeros.
            float amax = 0.f;
            int finite = 1;
            #pragma unroll
            for (int k = 0; k < 8; k++) {
                amax = fmaxf(amax, fabsf(v[p][k]));
                finite &= fabsf(v[p][k]) <= 3.402823466e38f;
            }
            amax = fmaxf(amax, __shfl_xor_sync(0xffffffffu, amax, 1));
            amax = fmaxf(amax, __shfl_xor_sync(0xffffffffu, amax, 2));
            finite &= __shfl_xor_sync(0xffffffffu, finite, 1);
            finite &= __shfl_xor_sync(0xffffffffu, finite, 2);
            float id = q8_factor(amax);
            int q[8], sum = 0;
            #pragma unroll
            for (int k = 0; k < 8; k++) {
                q[k] = __float2int_rn(v[p][k] * id);
                sum += q[k];
            }
            sum += __shfl_xor_sync(0xffffffffu, sum, 1);
            sum += __shfl_xor_sync(0xffffffffu, sum, 2);
            if (j < pieces) {
                sm[2 * j] = (q[0] & 0xff) | ((q[1] & 0xff) << 8) | ((q[2] & 0xff) << 16) | ((unsigned)(q[3] & 0xff) << 24);
                sm[2 * j + 1] = (q[4] & 0xff) | ((q[5] & 0xff) << 8) | ((q[6] & 0xff) << 16) | ((unsigned)(q[7] & 0xff) << 24);
                if ((j & 3) == 0) store_group_scales(gd, groups, j >> 2, amax, finite, sum);
            }
        }
    }
    __syncthreads();
}

// Shared bytes one staged activation row takes, rounded up to 16 (host: `staged_bytes`
// rounded): int8 values plus per group d, s and sum, or the floats.
template <int K> __device__ __forceinline__ int staged_stride(int cols) {
    int staged = KIND_INT8(K) ? cols + 12 * (cols >> 5) : 4 * cols;
    return (staged + 15) & ~15;
}

// An activation row's int8 image in global memory, written by the kernel that produces
// the row for the row kernel after it in the token graph (host: `chain.rs`): stage_x's
// shared layout of the row (int8 values, then per group d, s and sum; staged_stride<0>(cols)
// bytes), so the consumer copies it instead of staging the floats.
//
// Lane l holds value l of group g: the warp writes the group into the image of a
// `cols`-value row by stage_x's rule (a NaN or infinity makes the group's d NaN). Every
// lane of the warp calls.
__device__ void store_unit(float v, int g, int cols, unsigned char* img) {
    int groups = cols >> 5, lane = threadIdx.x & 31;
    float amax = warp_max(fabsf(v));
    bool finite = __all_sync(0xffffffffu, fabsf(v) <= 3.402823466e38f);
    int q = __float2int_rn(v * q8_factor(amax));
    int sum = __reduce_add_sync(0xffffffffu, q);
    img[32 * g + lane] = (unsigned char)(q & 0xff);
    if (lane == 0) store_group_scales((float*)(img + cols), groups, g, amax, finite, sum);
}

// Unsigned bytes of a . signed bytes of b, plus c.
__device__ __forceinline__ int dp4a_us(unsigned int a, int b, int c) {
    int d;
    asm("dp4a.u32.s32 %0, %1, %2, %3;" : "=r"(d) : "r"(a), "r"(b), "r"(c));
    return d;
}

// Nibbles of a 16-byte Q4 payload (byte i: value i low, value i + 16 high) . int8 x, the two
// halves apart: values 0-15 (the low nibbles) . xa into lo, values 16-31 . xb into hi. The
// high nibbles are dotted in place (16 x their value, as unsigned bytes), so no shifts.
__device__ __forceinline__ void dot_q4_halves(uint4 q, int4 xa, int4 xb, int& lo, int& hi) {
    int h = 0;
    lo = __dp4a((int)(q.x & 0x0F0F0F0Fu), xa.x, 0);
    h = dp4a_us(q.x & 0xF0F0F0F0u, xb.x, h);
    lo = __dp4a((int)(q.y & 0x0F0F0F0Fu), xa.y, lo);
    h = dp4a_us(q.y & 0xF0F0F0F0u, xb.y, h);
    lo = __dp4a((int)(q.z & 0x0F0F0F0Fu), xa.z, lo);
    h = dp4a_us(q.z & 0xF0F0F0F0u, xb.z, h);
    lo = __dp4a((int)(q.w & 0x0F0F0F0Fu), xa.w, lo);
    h = dp4a_us(q.w & 0xF0F0F0F0u, xb.w, h);
    hi = h >> 4;
}

// The same, summed.
__device__ __forceinline__ int dot_q4(uint4 q, int4 xa, int4 xb) {
    int lo, hi;
    dot_q4_halves(q, xa, xb, lo, hi);
    return lo + hi;
}

// 16 2-bit fields of word h, each minus 2 (-2..1), . int8 x: value 4 k + b's field is bits
// 8 b + 2 k, so (h >> 2 k) & 0x03030303 holds values 4 k .. 4 k + 3 (x's component k).
__device__ __forceinline__ int dot_high2(unsigned int h, int4 x) {
    int s = 0;
    s = __dp4a((int)__vsub4(h & 0x03030303u, 0x02020202u), x.x, s);
    s = __dp4a((int)__vsub4((h >> 2) & 0x03030303u, 0x02020202u), x.y, s);
    s = __dp4a((int)__vsub4((h >> 4) & 0x03030303u, 0x02020202u), x.z, s);
    s = __dp4a((int)__vsub4((h >> 6) & 0x03030303u, 0x02020202u), x.w, s);
    return s;
}

// 32 1-bit fields of word h . int8 x: value 4 k + b's bit is 8 b + k, so (h >> k) & 0x01010101
// holds values 4 k .. 4 k + 3 (x's component k; xa: values 0-15, xb: 16-31).
__device__ __forceinline__ int dot_high1(unsigned int h, int4 xa, int4 xb) {
    int s = 0;
    s = __dp4a((int)(h & 0x01010101u), xa.x, s);
    s = __dp4a((int)((h >> 1) & 0x01010101u), xa.y, s);
    s = __dp4a((int)((h >> 2) & 0x01010101u), xa.z, s);
    s = __dp4a((int)((h >> 3) & 0x01010101u), xa.w, s);
    s = __dp4a((int)((h >> 4) & 0x01010101u), xb.x, s);
    s = __dp4a((int)((h >> 5) & 0x01010101u), xb.y, s);
    s = __dp4a((int)((h >> 6) & 0x01010101u), xb.z, s);
    s = __dp4a((int)((h >> 7) & 0x01010101u), xb.w, s);
    return s;
}

// 32 int8 weights (two 16-byte words) . int8 x.
__device__ __forceinline__ int dot_q8(uint4 q0, uint4 q1, int4 xa, int4 xb) {
    int s = 0;
    s = __dp4a((int)q0.x, xa.x, s); s = __dp4a((int)q0.y, xa.y, s);
    s = __dp4a((int)q0.z, xa.z, s); s = __dp4a((int)q0.w, xa.w, s);
    s = __dp4a((int)q1.x, xb.x, s); s = __dp4a((int)q1.y, xb.y, s);
    s = __dp4a((int)q1.z, xb.z, s); s = __dp4a((int)q1.w, xb.w, s);
    return s;
}

// One weight row: the matrix's planar bytes, its scale region (u32 words), the row index.
struct Row {
    const unsigned char* w;
    int a_off;
    long row;
};

// One unit of a row as loaded from memory: a 16-byte payload word (b: the second one of
// Q8_0; q6: its two high-bit words in b.x, b.y; q4k, q5k: its superblock's d | dmin << 16 in
// b.x, q5k, q51 its high-bit word in b.y) and the unit's scale (f16 d for Q4_0 / Q8_0 in the low
// half, d | m << 16 for Q4_1 and q51, d | sc0 << 16 | sc1 << 24 for q6, sc | m << 8 for q4k, q5k).
struct Unit {
    uint4 a, b;
    unsigned int s;
};

// Units per row: 32 values (quantized), 8 halves (F16) or 4 floats (F32) each.
template <int K> __device__ __forceinline__ int units_per_row(int cols) {
    return KIND_INT8(K) ? cols >> 5 : (K == 3 ? cols >> 3 : cols >> 2);
}

// Unit u of a row . the staged x.
template <int K> __device__ __forceinline__ float unit_dot(const Unit& w, const int* sm, int cols, int u) {
    if (KIND_INT8(K)) {
        int groups = cols >> 5;
        const float* gd = (const float*)(sm + (cols >> 2));
        int4 xa = ((const int4*)sm)[2 * u], xb = ((const int4*)sm)[2 * u + 1];
        float dx = gd[u];
        if (K == 0) return h2f(w.s & 0xffff) * dx * (float)(dot_q4(w.a, xa, xb) - 8 * ((const int*)(gd + 2 * groups))[u]);
        if (K == 1 || K == KIND_Q51) {
            // q51: level = nibble + 16 high; the dot is at most 32 * 31 * 127 in magnitude.
            int dot = dot_q4(w.a, xa, xb);
            if (K == KIND_Q51) dot += 16 * dot_high1(w.b.y, xa, xb);
            return h2f(w.s & 0xffff) * dx * (float)dot + h2f(w.s >> 16) * gd[groups + u];
        }
        if (K == KIND_Q6) {
            // Level l - 32 = nibble + 16 (high - 2). Each half's dot is at most 16 * 32 * 127
            // in magnitude, times |scale| <= 128, so the sum is exact in f32.
            int lo0, lo1;
            dot_q4_halves(w.a, xa, xb, lo0, lo1);
            int h0 = lo0 + 16 * dot_high2(w.b.x, xa), h1 = lo1 + 16 * dot_high2(w.b.y, xb);
            return h2f(w.s & 0xffff) * dx * (float)((int)(signed char)(w.s >> 16) * h0 + (int)(signed char)(w.s >> 24) * h1);
        }
        if (KIND_AFFINE_K(K)) {
            // q5k: level = nibble + 16 high; the dot is at most 32 * 31 * 127 in magnitude.
            int dot = dot_q4(w.a, xa, xb);
            if (K == KIND_Q5K) dot += 16 * dot_high1(w.b.y, xa, xb);
            return h2f(w.b.x & 0xffff) * (float)(w.s & 0xff) * dx * (float)dot - h2f(w.b.x >> 16) * (float)(w.s >> 8) * gd[groups + u];
        }
        return h2f(w.s & 0xffff) * dx * (float)dot_q8(w.a, w.b, xa, xb);
    }
    const float* xf = (const float*)sm;
    if (K == 3) {
        float xv[8];
        load8(xf + 8 * u, xv);
        unsigned int ws[4] = {w.a.x, w.a.y, w.a.z, w.a.w};
        float acc = 0.f;
        #pragma unroll
        for (int k = 0; k < 4; k++) acc += h2f(ws[k] & 0xffff) * xv[2 * k] + h2f(ws[k] >> 16) * xv[2 * k + 1];
        return acc;
    }
    float4 f = ((const float4*)xf)[u];
    return __uint_as_float(w.a.x) * f.x + __uint_as_float(w.a.y) * f.y + __uint_as_float(w.a.z) * f.z + __uint_as_float(w.a.w) * f.w;
}

// Asynchronous global -> shared copies (sm_80+). A thread waits for its own copy groups;
// where threads read ring words other threads copied (Q8_0), their warp syncs after waiting.
__device__ __forceinline__ void cp_async16(void* dst, const void* src) {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"((unsigned)__cvta_generic_to_shared(dst)), "l"(src) : "memory");
}
__device__ __forceinline__ void cp_async4(void* dst, const void* src) {
    asm volatile("cp.async.ca.shared.global [%0], [%1], 4;" ::"r"((unsigned)__cvta_generic_to_shared(dst)), "l"(src) : "memory");
}
__device__ __forceinline__ void cp_commit() { asm volatile("cp.async.commit_group;" ::: "memory"); }
template <int N> __device__ __forceinline__ void cp_wait() { asm volatile("cp.async.wait_group %0;" ::"n"(N) : "memory"); }

// A weight copy into the ring: as cp_async16 / cp_async4, marked to leave L2 first (the
// policy from weight_policy), so the weights streamed through L2 each token do not push out
// the K / V rows, activation rows and norm weights. Measured on the H200 (NOTES.md, session
// 40): llama-1b q4_0 +2.0-2.2 %, q8_0 +2.3 %, llama-8b q4_0 +1.1 %, q8_0 +0.7 %, smollm2 q4_0 -1.0 %.
__device__ __forceinline__ unsigned long long weight_policy() {
    unsigned long long p;
    asm("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;" : "=l"(p));
    return p;
}
__device__ __forceinline__ void cp_weight16(void* dst, const void* src, unsigned long long pol) {
    asm volatile("cp.async.cg.shared.global.L2::cache_hint [%0], [%1], 16, %2;" ::"r"((unsigned)__cvta_generic_to_shared(dst)), "l"(src), "l"(pol) : "memory");
}
__device__ __forceinline__ void cp_weight4(void* dst, const void* src, unsigned long long pol) {
    asm volatile("cp.async.ca.shared.global.L2::cache_hint [%0], [%1], 4, %2;" ::"r"((unsigned)__cvta_generic_to_shared(dst)), "l"(src), "l"(pol) : "memory");
}

// Stage a row from its int8 image (written by the kernel before) in shared memory `sm`
// as stage_x would have. The copies go by cp.async, all in flight at once and no registers
// held (loaded and stored one at a time, llama-8b's 14336-wide down input took five L2 round
// trips); the closing wait also covers the weight ring's copies issued before it. Ends with a
// barrier.
__device__ void stage_image(const unsigned char* img, int cols, int* sm) {
    int words = staged_stride<0>(cols) >> 4;
    for (int i = threadIdx.x; i < words; i += blockDim.x) cp_async16((int4*)sm + i, (const int4*)img + i);
    cp_commit();
    cp_wait<0>();
    __syncthreads();
}

// Where one weight row's units start: its payload words, its scale words (Q4_1, q6: one
// record per unit; q4k, q5k: one per 8 units, rows being whole superblocks; Q4_0 / Q8_0: two
// f16 per word, from the word holding the row's first unit), q5k's high-bit words, and
// whether the row's first unit sits in a word's high half. Found once per warp group.
template <int K> struct RowSrc {
    const uint4* pay;
    const unsigned int* sc;
    const unsigned int* high;  // q5k, q51: unit 0's high-bit word
    int odd;
    __device__ __forceinline__ void set(const Row& row, int units) {
        long iu0 = row.row * units;
        pay = (const uint4*)row.w + iu0 * KIND_WORDS(K);
        sc = (const unsigned int*)row.w + row.a_off + (KIND_AFFINE_K(K) ? (iu0 >> 3) * 5 : KIND_SCALE_WORD(K) ? iu0 * KIND_SCALE_STRIDE(K) : iu0 >> 1);
        if (K == KIND_Q5K) high = (const unsigned int*)row.w + q5k_high_off(row.a_off) + iu0;
        if (K == KIND_Q51) high = (const unsigned int*)row.w + q51_high_off(row.a_off) + iu0;
        odd = (int)(iu0 & 1);
    }
    // Unit u's scale word (Q4_0 / Q8_0: the word holding its f16; Q4_1: its own); q6: its
    // 3-word record; q4k, q5k: its superblock's 5-word record.
    __device__ __forceinline__ const unsigned int* record(int u) const {
        if (KIND_AFFINE_K(K)) return sc + (u >> 3) * 5;
        return KIND_SCALE_WORD(K) ? sc + u * KIND_SCALE_STRIDE(K) : sc + ((odd + u) >> 1);
    }
};

// The weight ring: per thread RING_UNITS_Q8 (Q8_0) or RING_UNITS units in flight (ring
// slots x rows), payload words then scale words (q6: its records' three; q5k two; q51 its scale word, then after every slot's its high-bit word), thread-major so a warp's copies and reads
// are conflict-free (Q8_0's gathering reads: 2-way); ROW_THREADS threads per block (both
// from the host, which sizes it: `ring_bytes`). The ring starts after the staged
// activation rows.
template <int K> struct Ring {
    static constexpr int WORDS = KIND_WORDS(K);
    static constexpr int UNITS = WORDS == 2 ? RING_UNITS_Q8 : RING_UNITS;
    static constexpr bool SCALED = KIND_INT8(K);
    static constexpr int RECORD = SCALED ? KIND_RECORD(K) : 0;  // scale words a unit
    static constexpr int BYTES = ROW_THREADS * UNITS * (16 * WORDS + 4 * RECORD);  // the block's ring (host: `ring_bytes`)
    // Whether a lane reads ring words other lanes copied, so that its warp syncs around the
    // refill: Q8_0's payload, and the records of q6, q4k and q5k, which lie contiguous in
    // memory for a warp's 32 units (q6: 96 words, 16-byte aligned; q4k, q5k: 4 superblocks' 5
    // words; q5k's high-bit words: 32, 16-byte aligned) and are copied whole into the warp's
    // record slots (q6 24 lanes' copies instead of 3 a lane, q4k 20 instead of 2, q5k 20 and 8
    // into the slots' second words) for `take` to gather a unit's words from.
    static constexpr bool GATHERED = WORDS == 2 || K == KIND_Q6 || KIND_AFFINE_K(K);
    uint4* pay;          // this thread's slot 0 payload word
    unsigned int* sc;    // this thread's slot 0 scale word
    unsigned int* rec;   // q6, q4k, q5k: this warp's slot 0 record words (32 x RECORD)
    __device__ Ring(int* sm, int staged_bytes) {
        pay = (uint4*)((char*)sm + staged_bytes) + threadIdx.x;
        sc = (unsigned int*)((uint4*)((char*)sm + staged_bytes) + UNITS * WORDS * ROW_THREADS) + threadIdx.x;
        rec = sc - threadIdx.x + (threadIdx.x & ~31) * RECORD;
    }
    // Start copying the units u0 + lane (clamped to the row) of the row at `src` into each
    // lane's slot `slot`. Q8_0's two payload words a unit are copied in two sweeps over
    // the warp's consecutive words, each lane's word to its own place (sweep w, lane l: word
    // 32 w + l, half l & 1 of unit 16 w + l / 2), so that each sweep moves 512 contiguous
    // bytes into 512 contiguous bytes (copies contiguous on one side only, a lane's own
    // unit's two words or contiguous reads scattered to the owning lanes, streamed at ~60 %
    // of Q4's bytes per second: ncu, NOTES.md c17); `take` gathers a unit's words from the
    // lanes that copied them, so the warp syncs before reading.
    __device__ __forceinline__ void issue(const RowSrc<K>& src, int u0, int units, int slot) {
        int lane = threadIdx.x & 31, u = min(u0 + lane, units - 1);
        unsigned long long pol = weight_policy();
        if (WORDS == 2) {
            #pragma unroll
            for (int w = 0; w < 2; w++) cp_weight16(pay + (slot * 2 + w) * ROW_THREADS, src.pay + 2 * min(u0 + 16 * w + (lane >> 1), units - 1) + (lane & 1), pol);
        } else {
            cp_weight16(pay + slot * ROW_THREADS, src.pay + u, pol);
        }
        // (Rows of q6, q4k and q5k are whole superblocks, so units - u0 is a multiple of 8.)
        if (K == KIND_Q6) {
            if (lane < min(32, units - u0) * 3 / 4) cp_weight16((uint4*)(rec + slot * 3 * ROW_THREADS) + lane, (const uint4*)src.record(u0) + lane, pol);
        } else if (KIND_AFFINE_K(K)) {
            int n = min(32, units - u0);
            unsigned int* r = rec + slot * RECORD * ROW_THREADS;
            if (lane < n / 8 * 5) cp_weight4(r + lane, src.record(u0) + lane, pol);
            // q5k: lanes 20.. copy the high-bit words, 4 a lane, into words 32..63.
            else if (K == KIND_Q5K && lane >= 20 && lane < 20 + n / 4) cp_weight16((uint4*)(r + 32) + (lane - 20), (const uint4*)(src.high + u0) + (lane - 20), pol);
        } else if (SCALED) {
            cp_weight4(sc + slot * ROW_THREADS, src.record(u), pol);
            // q51: each lane's high-bit word into the scale slots' second half.
            if (K == KIND_Q51) cp_weight4(sc + (UNITS + slot) * ROW_THREADS, src.high + u, pol);
        }
    }
    // The unit in slot `slot`; `shift` picks its f16 scale (Q4_0 / Q8_0) or its scale and
    // minimum (q4k) out of the word.
    __device__ __forceinline__ Unit take(int slot, int shift) const {
        Unit x;
        if (WORDS == 2) {
            int lane = threadIdx.x & 31;
            const uint4* p = pay + (slot * 2 + (lane >> 4)) * ROW_THREADS + ((2 * lane) & 31) - lane;
            x.a = p[0];
            x.b = p[1];
        } else {
            x.a = pay[slot * ROW_THREADS];
        }
        if (K == KIND_Q6) {
            const unsigned int* r = rec + slot * 3 * ROW_THREADS + 3 * (threadIdx.x & 31);
            x.b.x = r[0];
            x.b.y = r[1];
            x.s = r[2];
        } else if (KIND_AFFINE_K(K)) {
            int lane = threadIdx.x & 31;
            const unsigned int* r = rec + slot * RECORD * ROW_THREADS;
            x.b.x = r[(lane >> 3) * 5];
            x.s = (r[(lane >> 3) * 5 + 1 + ((lane & 7) >> 1)] >> shift) & 0xffff;
            if (K == KIND_Q5K) x.b.y = r[32 + lane];
        } else if (SCALED) {
            unsigned int s = sc[slot * ROW_THREADS];
            x.s = KIND_SCALE_WORD(K) ? s : (s >> shift) & 0xffff;
            if (K == KIND_Q51) x.b.y = sc[(UNITS + slot) * ROW_THREADS];
        }
        return x;
    }
};

// Where a row kernel's activation row comes from: floats (staged by stage_x, normed when
// nw is given), an int8 image (stage_image), or floats plus the pending part (stage_x's
// PENDING; one row).
#define X_FLOATS 0
#define X_IMAGE 1
#define X_PENDING 2

// The rows of one launch, R consecutive rows per warp group (a Map gives row(i); begin(first
// row, total), which single-row kernels (NB = 1) call once per group before its dot products,
// the first group's after the wait unless the map's EARLY says begin reads nothing the kernel
// before writes; and finish(activation row, first row, sums)); total < 2^31. Every warp walks
// its groups (warp, warp + warps, ...) unit by unit, lanes side by side: work item t is group
// warp + (t / iters) * warps, unit lane + 32 (t % iters). A Map with UNIT > 0 rows (total a
// multiple of it) takes whole units a block instead: block b walks units b * per .. (per =
// units / blocks, rounded up), each in passes of its warps over R x warps-a-block consecutive
// rows, and after a unit's last pass every thread of the block calls map.unit_done(unit,
// total). The weights of the next P items stream into the thread's shared-memory ring by
// cp.async (no registers held), the first ones before x is staged (and before waiting for the
// kernel that wrote x). x holds n activation rows (n <= NB, the tile the shared memory was laid
// out for: NB_alloc rows of staged x, then the ring); every weight unit is dotted with all of
// them. A norm (nw) is for one row only. XS (X_*) says what x is: floats, (one row, never
// normed) an int8 image, or (one row) floats plus the pending part xa. Row addresses are
// looked up once per group, not per unit.
template <int K, int R, int NB, int XS = X_FLOATS, class Map>
__device__ __forceinline__ void run_rows(Map& map, int total, int cols, const float* x, int n, int nb_alloc, const float* nw, float eps, int* sm, const long long* xa = nullptr) {
    constexpr int P = Ring<K>::UNITS / R;
    static_assert(P * R == Ring<K>::UNITS && (P & (P - 1)) == 0, "ring slots: a power of two of items");
    static_assert(XS != X_IMAGE || (NB == 1 && KIND_INT8(K)), "an int8 image: one row, a quantized codec");
    static_assert(XS != X_PENDING || NB == 1, "a pending part: one row");
    constexpr int PASS = R * (ROW_THREADS / 32);  // rows a block's pass (UNIT maps)
    static_assert(Map::UNIT % PASS == 0, "a unit: whole passes");
    int stride = staged_stride<K>(cols);
    Ring<K> ring(sm, nb_alloc * stride);
    int lane = threadIdx.x & 31;
    int warp = (blockIdx.x * ROW_THREADS + threadIdx.x) >> 5, warps = (gridDim.x * ROW_THREADS) >> 5;
    int units = units_per_row<K>(cols), iters = (units + 31) >> 5;
    int groups = (total + R - 1) / R;
    // The first row group, the step to the next and the items of this warp; UNIT maps: the
    // block's first unit, and passes left in the current unit.
    int row_first = warp * R, row_step = warps * R, items, unit = 0, pass_left = 0;
    if constexpr (Map::UNIT > 0) {
        int all = total / Map::UNIT, per = (all + gridDim.x - 1) / gridDim.x;
        unit = blockIdx.x * per;
        row_first = unit * Map::UNIT + (threadIdx.x >> 5) * R;
        row_step = PASS;
        pass_left = Map::UNIT / PASS;
        items = max(0, min(per, all - unit)) * (Map::UNIT / PASS) * iters;
    } else {
        items = warp < groups ? ((groups - 1 - warp) / warps + 1) * iters : 0;
    }
#ifdef CORTIQ_NO_STREAM
    items = 0;  // profiling (anatomy.rs): no weight stream, no dot products
#endif
    // Where an item is: its unit iteration within the group and the group's first row;
    // stepped item by item (no divisions in the loop).
    struct Cursor {
        int it, row0;
    };
    // Item t's unit (clamped: lanes past the row's end load a valid unit and drop it).
    auto unit_of = [&](const Cursor& c) { return min(lane + 32 * c.it, units - 1); };
    RowSrc<K> src[R];  // the rows of the group `ahead` is in
    auto find_rows = [&](int row0) {
        #pragma unroll
        for (int r = 0; r < R; r++) src[r].set(map.row(min(row0 + r, total - 1)), units);
    };
    Cursor ahead{0, row_first}, now{0, row_first};
    if (items) find_rows(ahead.row0);
    auto issue = [&](int t) {
        if (t < items) {
            int slot = (t & (P - 1)) * R;
            #pragma unroll
            for (int r = 0; r < R; r++) ring.issue(src[r], 32 * ahead.it, units, slot + r);
            if (++ahead.it == iters) {
                ahead.it = 0;
                ahead.row0 += row_step;
                if (t + 1 < items) find_rows(ahead.row0);
            }
        }
        cp_commit();
    };
    // Bit offset of each row's f16 scale (q4k: scale and minimum) in the scale words of the
    // group `now` is in: a lane's units all have its parity (u = lane + 32 * it), clamped
    // lanes are dropped.
    int shift[R] = {0};
    auto find_shifts = [&](int row0) {
        #pragma unroll
        for (int r = 0; r < R; r++) {
            RowSrc<K> s;
            s.set(map.row(min(row0 + r, total - 1)), units);
            shift[r] = ((s.odd + lane) & 1) << 4;
        }
    };
    // The K-quant kinds' tile kernels' prologue unrolled: rolled, CUDA 13.0's ptxas (the
    // driver 580 JIT) compiled kind 7's tile kernel to cp.async through uniform registers
    // nothing writes (NOTES.md, session 51; CI checks every kind). Every other kernel's rolled
    // loop is as fast or faster (session 56: unrolled, smollm2 q4_0 decode -2.5 %, llama-8b
    // q8_0 -1.5 % on the H200; session 58: the K-quant row kernels rolled, even on an H100).
    if constexpr (KIND_AFFINE_K(K) && NB > 1) {
        #pragma unroll
        for (int t = 0; t < P - 1; t++) issue(t);
    } else {
        for (int t = 0; t < P - 1; t++) issue(t);
    }
    if constexpr (NB == 1 && Map::EARLY) {
        if (items) map.begin(now.row0, total);
    }
    pdl_wait_then_release(Map::RELEASE_FIRST);
    if constexpr (NB == 1 && !Map::EARLY) {
        if (items) map.begin(now.row0, total);
    }
#ifdef CORTIQ_NO_STAGING
    __syncthreads();  // profiling (anatomy.rs): the staging's closing barrier only
#else
    if (XS == X_FLOATS) {
        for (int b = 0; b < n; b++) stage_x(K, x + (long)b * cols, nw, eps, cols, sm + b * (stride >> 2));
    } else if (XS == X_PENDING) {
        stage_x<true>(K, x, nw, eps, cols, sm, xa);
    } else {
        stage_image((const unsigned char*)x, cols, sm);
    }
#endif
    TRACE_STAGED();
    if (items && (K == 0 || K == 2 || KIND_AFFINE_K(K))) find_shifts(now.row0);
    float acc[R][NB];
    #pragma unroll
    for (int r = 0; r < R; r++) {
        #pragma unroll
        for (int b = 0; b < NB; b++) acc[r][b] = 0.f;
    }
    for (int t = 0; t < items; t++) {
        // Refill the slot item t - 1 used (its values are in acc already), then wait for t.
        // Lanes reading ring words other lanes copied: the warp syncs around the refill.
        if (Ring<K>::GATHERED) __syncwarp();
        issue(t + P - 1);
        cp_wait<P - 1>();
        if (Ring<K>::GATHERED) __syncwarp();
        int u = unit_of(now), i0 = now.row0, slot = (t & (P - 1)) * R;
        if (lane + 32 * now.it < units) {
            #pragma unroll
            for (int r = 0; r < R; r++) {
                Unit wu = ring.take(slot + r, shift[r]);
                #pragma unroll
                for (int b = 0; b < NB; b++)
                    if (b < n) acc[r][b] += unit_dot<K>(wu, sm + b * (stride >> 2), cols, u);
            }
        }
        if (++now.it == iters) {
            #pragma unroll
            for (int b = 0; b < NB; b++) {
                if (b < n) {
                    float sums[R];
                    #pragma unroll
                    for (int r = 0; r < R; r++) sums[r] = warp_sum(acc[r][b]);
                    if (lane == 0) map.finish(b, i0, total, sums);
                }
            }
            #pragma unroll
            for (int r = 0; r < R; r++) {
                #pragma unroll
                for (int b = 0; b < NB; b++) acc[r][b] = 0.f;
            }
            now.it = 0;
            now.row0 += row_step;
            if constexpr (Map::UNIT > 0) {
                if (--pass_left == 0) {
                    map.unit_done(unit++, total);
                    pass_left = Map::UNIT / PASS;
                }
            }
            // (q4k and q5k rows start on whole superblocks, so their shifts never change.)
            if ((K == 0 || K == 2) && t + 1 < items) find_shifts(now.row0);
            if constexpr (NB == 1) {
                if (t + 1 < items) map.begin(now.row0, total);
            }
        }
    }
    TRACE_DOTTED();
    cp_wait<0>();
    map.flush();
}

// A row's value and index as one integer whose maximum is the argmax (largest value, first
// index on ties; -0 counts as 0); 0 for NaN, which is never chosen.
__device__ __forceinline__ unsigned long long argmax_key(float v, int i) {
    if (v != v) return 0ull;
    unsigned int u = __float_as_uint(v == 0.f ? 0.f : v);
    unsigned int ord = (u & 0x80000000u) ? ~u : (u | 0x80000000u);
    return ((unsigned long long)ord << 32) | (0xffffffffu - (unsigned int)i);
}

// One matrix; y[b * total + i] = sum for activation row b (or += sum when add). With
// `best` (one activation row), the block's largest argmax_key of its outputs is folded into
// *best (atomicMax; the caller zeroes it first). FOLD (an add, one activation row): the
// pending part xa is folded into y and zeroed.
template <int R, bool FOLD = false> struct PlainMap {
    static constexpr int UNIT = 0;
    static constexpr bool EARLY = false;  // begin loads y, which the kernel before may write
    static constexpr bool RELEASE_FIRST = true;  // the next kernel launches before the wait
    const unsigned char* w;
    int a_off;
    float* y;
    int add;
    unsigned long long* best;
    unsigned long long mine;  // lane 0's best key so far
    float ahead[R];           // lane 0, add: activation row 0's y values of the rows `begin` named
    bool primed = false;      // whether `begin` loaded them (tile kernels and mma_rows never call it)
    long long* xa = nullptr;  // FOLD: the pending part
    __device__ Row row(int i) const { return Row{w, a_off, i}; }
    // y's value i for an add, with the pending part folded in (FOLD).
    __device__ float base(const float* yb, int i, int total) const { return FOLD ? yb[i] + pending_value(xa, i, total) : yb[i]; }
    // Lane 0 loads the y values rows i0 .. i0 + R - 1 are added to (activation row 0), so
    // that their finish does not wait a round trip for them.
    __device__ void begin(int i0, int total) {
        if (!add || (threadIdx.x & 31) != 0) return;
        #pragma unroll
        for (int r = 0; r < R; r++)
            if (i0 + r < total) ahead[r] = base(y, i0 + r, total);
        primed = true;
    }
    __device__ void finish(int b, int i0, int total, const float* s) {
        float* yb = y + (long)b * total;
        #pragma unroll
        for (int r = 0; r < R; r++) {
            if (i0 + r < total) {
                float v = add ? (b == 0 && primed ? ahead[r] : base(yb, i0 + r, total)) + s[r] : s[r];
                yb[i0 + r] = v;
                if (FOLD) xa[i0 + r] = 0ll;
                if (best) mine = max(mine, argmax_key(v, i0 + r));
            }
        }
    }
    // Every thread of the block calls this once, at the end.
    __device__ void flush() {
        __shared__ unsigned long long warp_best[32];
        if (!best) return;
        if ((threadIdx.x & 31) == 0) warp_best[threadIdx.x >> 5] = mine;
        __syncthreads();
        if (threadIdx.x == 0) {
            unsigned long long m = 0ull;
            for (int k = 0; k < (blockDim.x >> 5); k++) m = max(m, warp_best[k]);
            if (m) atomicMax(best, m);
        }
    }
};

// The values of a block's output units (UNIT maps) as their rows finish: two units' worth,
// by the unit's parity, so one unit is quantized while the next one's rows are summed (one
// barrier a unit: a unit's buffer is written again only after the barrier of the unit in
// between, which its quantizing warp has passed).
__device__ __forceinline__ float* unit_values(int unit) {
    __shared__ float v[2][32];
    return v[unit & 1];
}

// y (batch, rows) = x (batch, cols) . W^T (added into y when add != 0), x RMS-normed with
// nw first when nw is not null; codec kind K, R rows per warp group, batch row blockIdx.y.
// With best (batch 1 only): the argmax of y as an argmax_key, folded into *best.
// Dynamic shared memory: the staged x, then the weight ring (host: `row_smem(kind, cols, 1)`).
#define MATVEC(K, R)                                                                                      \
    extern "C" __global__ void __launch_bounds__(ROW_THREADS) matvec_k##K##_r##R(const unsigned char* w, int a_off, \
            const float* x, const float* nw, float eps, float* y, int rows, int cols, int add,             \
            unsigned long long* best) {                                                                    \
        extern __shared__ int sm[];                                                                       \
        int b = blockIdx.y;                                                                               \
        TRACE_BLOCK(5);                                                                                   \
        PlainMap<R> m{w, a_off, y + (long)b * rows, add, best, 0ull};                                     \
        run_rows<K, R, 1>(m, rows, cols, x + (long)b * cols, 1, 1, nw, eps, sm);                          \
    }
#define MATVEC_R(K) MATVEC(K, 1) MATVEC(K, 2) MATVEC(K, 4)
MATVEC_R(0) MATVEC_R(1) MATVEC_R(2) MATVEC_R(3) MATVEC_R(4) MATVEC_R(5) MATVEC_R(6) MATVEC_R(7) MATVEC_R(8)

// y = x plus the pending part xa (one row; `pending_value`), then as matvec: RMS-normed with nw
// when nw is not null, . W^T, the argmax folded into *best when best is not null (the token
// graph's head where the FFN is fused).
#define MATVEC_PEND(K, R)                                                                                 \
    extern "C" __global__ void __launch_bounds__(ROW_THREADS) matvec_pend_k##K##_r##R(const unsigned char* w, int a_off, \
            const float* x, const long long* xa, const float* nw, float eps, float* y, int rows, int cols, \
            unsigned long long* best) {                                                                    \
        extern __shared__ int sm[];                                                                       \
        TRACE_BLOCK(5);                                                                                   \
        PlainMap<R> m{w, a_off, y, 0, best, 0ull};                                                        \
        run_rows<K, R, 1, X_PENDING>(m, rows, cols, x, 1, 1, nw, eps, sm, xa);                            \
    }
#define MATVEC_PEND_R(K) MATVEC_PEND(K, 1) MATVEC_PEND(K, 2) MATVEC_PEND(K, 4)
MATVEC_PEND_R(0) MATVEC_PEND_R(1) MATVEC_PEND_R(2) MATVEC_PEND_R(3) MATVEC_PEND_R(4) MATVEC_PEND_R(5) MATVEC_PEND_R(6) MATVEC_PEND_R(7) MATVEC_PEND_R(8)

// The token graph's int8 chain (host: `chain.rs`): y (rows) = a . W^T (added into y when
// add != 0), a given by its int8 image img (one row; quantized codec kinds only).
#define MATVEC_IMG(K, R)                                                                                  \
    extern "C" __global__ void __launch_bounds__(ROW_THREADS) matvec_img_k##K##_r##R(const unsigned char* w, int a_off, \
            const unsigned char* img, float* y, int rows, int cols, int add) {                            \
        extern __shared__ int sm[];                                                                       \
        TRACE_BLOCK(6);                                                                                   \
        PlainMap<R> m{w, a_off, y, add, nullptr, 0ull};                                                   \
        run_rows<K, R, 1, X_IMAGE>(m, rows, cols, (const float*)img, 1, 1, nullptr, 0.f, sm);             \
    }
#define MATVEC_IMG_R(K) MATVEC_IMG(K, 1) MATVEC_IMG(K, 2) MATVEC_IMG(K, 4)
MATVEC_IMG_R(0) MATVEC_IMG_R(1) MATVEC_IMG_R(2) MATVEC_IMG_R(5) MATVEC_IMG_R(6) MATVEC_IMG_R(7) MATVEC_IMG_R(8)

// The same, y += a . W^T, with x's pending part xa folded into y and zeroed (the output
// projection where the FFN is fused).
#define MATVEC_IMG_FOLD(K, R)                                                                             \
    extern "C" __global__ void __launch_bounds__(ROW_THREADS) matvec_img_fold_k##K##_r##R(const unsigned char* w, int a_off, \
            const unsigned char* img, float* y, int rows, int cols, long long* xa) {                      \
        extern __shared__ int sm[];                                                                       \
        TRACE_BLOCK(6);                                                                                   \
        PlainMap<R, true> m{w, a_off, y, 1, nullptr, 0ull};                                               \
        m.xa = xa;                                                                                        \
        run_rows<K, R, 1, X_IMAGE>(m, rows, cols, (const float*)img, 1, 1, nullptr, 0.f, sm);             \
    }
#define MATVEC_IMG_FOLD_R(K) MATVEC_IMG_FOLD(K, 1) MATVEC_IMG_FOLD(K, 2) MATVEC_IMG_FOLD(K, 4)
MATVEC_IMG_FOLD_R(0) MATVEC_IMG_FOLD_R(1) MATVEC_IMG_FOLD_R(2) MATVEC_IMG_FOLD_R(5) MATVEC_IMG_FOLD_R(6) MATVEC_IMG_FOLD_R(7) MATVEC_IMG_FOLD_R(8)

// Prefill: y (batch, rows) = x (batch, cols) . W^T (added into y when add != 0) in tiles of
// nb <= MATMUL_TILE activation rows (blockIdx.y: tile), each weight unit read once per tile
// and dotted with every row of it; codec kind K, 2 rows per warp group. Dynamic shared memory: nb staged rows, then the
// weight ring (host: `row_smem(kind, cols, nb)`).
#define MATMUL_TILE 8
#define MATMUL(K)                                                                                         \
    extern "C" __global__ void __launch_bounds__(256) matmul_k##K##_r2(const unsigned char* w, int a_off,  \
            const float* x, float* y, int rows, int cols, int add, int batch, int nb) {                   \
        extern __shared__ int sm[];                                                                       \
        int b0 = blockIdx.y * nb;                                                                         \
        PlainMap<2> m{w, a_off, y + (long)b0 * rows, add, nullptr, 0ull};                                 \
        run_rows<K, 2, MATMUL_TILE>(m, rows, cols, x + (long)b0 * cols, min(nb, batch - b0), nb, nullptr, 0.f, sm); \
    }
MATMUL(0) MATMUL(1) MATMUL(2) MATMUL(3) MATMUL(4) MATMUL(5) MATMUL(6) MATMUL(7) MATMUL(8)

// silu(g) * u: the gated FFN's hidden value (every kernel that forms it).
__device__ __forceinline__ float silu_times(float g, float u) { return g / (1.f + expf(-g)) * u; }

// GELU, exact (erf by Abramowitz-Stegun 7.1.26, as the CPU twin) or tanh-approximated (its
// argument clamped where tanh has long saturated, as act.wgsl).
__device__ __forceinline__ float gelu_exact(float v) {
    float z = fabsf(v * 0.70710678f), t = 1.f / (1.f + 0.3275911f * z);
    float poly = t * (0.254829592f + t * (-0.284496736f + t * (1.421413741f + t * (-1.453152027f + t * 1.061405429f))));
    return 0.5f * v * (1.f + copysignf(1.f - poly * expf(-z * z), v));
}
__device__ __forceinline__ float gelu_tanh(float v) {
    return 0.5f * v * (1.f + tanhf(fminf(fmaxf(0.7978846f * (v + 0.044715f * v * v * v), -15.f), 15.f)));
}

// The FFN activations as the host numbers them (`act_code`).
#define GLU_SILU 0
#define GLU_GELU_EXACT 1
#define GLU_GELU_TANH 2

// g = act(g) * u, element-wise over n values; act a GLU_* (the per-op FFN's step between
// gate/up and down).
extern "C" __global__ void act_mul(float* g, const float* u, int n, int act) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float v = g[i];
    g[i] = act == GLU_SILU ? silu_times(v, u[i]) : (act == GLU_GELU_EXACT ? gelu_exact(v) : gelu_tanh(v)) * u[i];
}
