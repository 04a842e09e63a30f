// What would one thread-block cluster cost as the whole decode layer of a small model?
// Prices the parts of a persistent design before writing it (issue #8, smollm2's 5000 tok/s):
//   1. one barrier: barrier.cluster over 8 / 16 blocks, and a counter barrier over 132 blocks;
//   2. cold weight streaming from 16 SMs and from 132;
//   3. a layer skeleton: per stage, each block reads its slice of the stage's bytes (weights or
//      K/V, never in L2), reduces it, writes its share of the activation, barrier, reads the
//      whole activation (checked) and carries it into the next stage's writes. No model math,
//      so the times are the design's floor at smollm2 q4_0's byte counts.
// Build and run on the GPU machine: nvcc -O3 -arch=sm_90 -o cluster_layer cluster_layer.cu && ./cluster_layer
// (`./cluster_layer trace`: only the last section, where a stage's time goes).
#include <cooperative_groups.h>
#include <cuda_runtime.h>
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>
namespace cg = cooperative_groups;

#define CK(x)                                                                                   \
    do {                                                                                        \
        cudaError_t e_ = (x);                                                                   \
        if (e_ != cudaSuccess) {                                                                \
            fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_)); \
            exit(1);                                                                            \
        }                                                                                       \
    } while (0)

constexpr int THREADS = 512;
constexpr int SLICE_INT4 = 4096;  // one prefetch buffer: 64 KB a block
constexpr int MAX_STAGES = 8;

struct Plan {
    int layers, stages;
    unsigned stage_int4[MAX_STAGES];  // a stage's bytes / 16 (all blocks together)
    unsigned long long base;          // first int4 of this run in the weight buffer
    int width;                        // activation floats exchanged at each barrier
};

__device__ __forceinline__ unsigned ld_acquire(const unsigned* p) {
    unsigned v;
    asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
    return v;
}
__device__ __forceinline__ void st_release(unsigned* p, unsigned v) {
    asm volatile("st.release.gpu.global.u32 [%0], %1;" ::"l"(p), "r"(v) : "memory");
}

// Counter barrier over every block of the grid (all resident: one block an SM).
__device__ __forceinline__ void grid_barrier(unsigned* count, unsigned* gen, unsigned blocks) {
    __syncthreads();
    if (threadIdx.x == 0) {
        unsigned g = ld_acquire(gen);
        __threadfence();
        if (atomicAdd(count, 1) == blocks - 1) {
            atomicExch(count, 0);
            __threadfence();
            st_release(gen, g + 1);
        } else {
            while (ld_acquire(gen) == g) {
            }
        }
    }
    __syncthreads();
}

__global__ void cluster_barrier_loop(int iters, int* sink) {
    cg::cluster_group cluster = cg::this_cluster();
    for (int i = 0; i < iters; ++i) cluster.sync();
    if (threadIdx.x == 0) sink[blockIdx.x] = iters;
}

// The SM clock while 16 blocks spin: clock64 ticks against globaltimer ns over ~100 us.
__global__ void clock_rate(unsigned long long* out) {
    unsigned long long t0 = 0, c0 = clock64();
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
    unsigned long long t = t0;
    while (t - t0 < 100000) asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    if (threadIdx.x == 0 && blockIdx.x == 0) {
        out[0] = clock64() - c0;
        out[1] = t - t0;
    }
}

__global__ void grid_barrier_loop(int iters, unsigned* bar, int* sink) {
    for (int i = 0; i < iters; ++i) grid_barrier(bar, bar + 1, gridDim.x);
    if (threadIdx.x == 0) sink[blockIdx.x] = iters;
}

// Each block streams per_block int4s, 8 loads in flight a thread.
__global__ void __launch_bounds__(THREADS, 1) stream_read(const int4* __restrict__ w, unsigned long long per_block, int* sink) {
    const int4* p = w + blockIdx.x * per_block;
    int acc = 0;
    for (unsigned long long i = threadIdx.x; i < per_block; i += THREADS * 8ull) {
        int4 v[8];
#pragma unroll
        for (int u = 0; u < 8; ++u) {
            unsigned long long j = i + u * THREADS;
            v[u] = j < per_block ? __ldcs(p + j) : make_int4(0, 0, 0, 0);
        }
#pragma unroll
        for (int u = 0; u < 8; ++u) acc ^= v[u].x ^ v[u].y ^ v[u].z ^ v[u].w;
    }
    if (acc == 0x5eed) sink[blockIdx.x] = acc;
}

__device__ __forceinline__ float expected(int job, int index) { return (float)((job * 131 + index) & 0xffff); }

__device__ __forceinline__ unsigned smem_addr(const void* p) { return (unsigned)__cvta_generic_to_shared(p); }
__device__ __forceinline__ void cp_async16(void* dst, const void* src) {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(smem_addr(dst)), "l"(src) : "memory");
}
__device__ __forceinline__ void cp_commit() { asm volatile("cp.async.commit_group;" ::: "memory"); }
template <int N>
__device__ __forceinline__ void cp_wait() { asm volatile("cp.async.wait_group %0;" ::"n"(N) : "memory"); }

// mbarriers (sm_90): one arrival a phase plus transaction bytes.
__device__ __forceinline__ void mbar_init(unsigned long long* bar, unsigned count) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(smem_addr(bar)), "r"(count) : "memory");
}
__device__ __forceinline__ void mbar_expect(unsigned long long* bar, unsigned bytes) {
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(smem_addr(bar)), "r"(bytes) : "memory");
}
__device__ __forceinline__ void mbar_wait(unsigned long long* bar, unsigned parity) {
    asm volatile(
        "{\n\t.reg .pred done;\n\twait_%=:\n\t"
        "mbarrier.try_wait.parity.acquire.cluster.shared::cta.b64 done, [%0], %1;\n\t"
        "@!done bra wait_%=;\n\t}" ::"r"(smem_addr(bar)), "r"(parity) : "memory");
}
// One bulk copy global -> this block's shared memory, completing on `bar` (bytes: x16).
__device__ __forceinline__ void bulk_copy(void* dst, const void* src, unsigned bytes, unsigned long long* bar) {
    asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];"
                 ::"r"(smem_addr(dst)), "l"(src), "r"(bytes), "r"(smem_addr(bar)) : "memory");
}
// v stored into block `rank`'s shared word at local address `local`, completing 4 bytes on
// that block's barrier at local address `bar`.
__device__ __forceinline__ void st_async(const float* local, unsigned long long* bar, unsigned rank, float v) {
    unsigned ra, rb;
    asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(ra) : "r"(smem_addr(local)), "r"(rank));
    asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(rb) : "r"(smem_addr(bar)), "r"(rank));
    asm volatile("st.async.shared::cluster.mbarrier::complete_tx::bytes.b32 [%0], %1, [%2];" ::"r"(ra), "r"(__float_as_uint(v)), "r"(rb) : "memory");
}

// Each block streams per_block bytes by bulk copies of 16 KB into a ring of 8 (thread 0).
__global__ void __launch_bounds__(THREADS, 1) stream_bulk(const int4* __restrict__ w, unsigned long long per_block, int* sink) {
    extern __shared__ int4 ring[];
    __shared__ unsigned long long bars[8];
    const unsigned piece = 16384;
    if (threadIdx.x == 0) {
        for (int b = 0; b < 8; ++b) mbar_init(&bars[b], 1);
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
        const char* src = (const char*)(w + blockIdx.x * (per_block / 16));
        unsigned long long pieces = per_block / piece;
        for (unsigned long long c = 0; c < pieces; ++c) {
            int b = c % 8;
            if (c >= 8) mbar_wait(&bars[b], ((c / 8) - 1) & 1);
            mbar_expect(&bars[b], piece);
            bulk_copy((char*)ring + b * piece, src + c * piece, piece, &bars[b]);
        }
        for (unsigned long long c = pieces > 8 ? pieces - 8 : 0; c < pieces; ++c) mbar_wait(&bars[c % 8], (c / 8) & 1);
        sink[blockIdx.x] = ring[threadIdx.x].x;
    }
}

// The layer skeleton. Exchange MODE 0: cluster barrier, activation through global memory;
// 1: cluster barrier, distributed shared memory stores into every block; 2: whole grid,
// counter barrier, global memory; 3: st.async into every block, each block waiting on its own
// mbarrier (no cluster barrier); 4: a cluster barrier and nothing exchanged (the loop's cost);
// 5: nothing exchanged, no barrier between blocks (one block's own pipeline).
// COPY 0 with NBUF 0: a stage's slice loaded after its barrier; COPY 0: the slices of the next
// NBUF - 1 stages copied ahead by cp.async (16 B a thread); COPY 1: the same by bulk copies.
// WAIT 1: thread 0 alone waits on a slot's mbarrier, then a block barrier (else every thread
// spins on it). TRACE: block 0's thread 0 adds the cycles of each part of a job, by stage,
// into g_trace (after issue, after the wait, after the read-back and its barrier, the rest).
__device__ unsigned long long g_trace[MAX_STAGES][4];
// TRACE with bulk copies: thread 0's cycles in the expect_tx, the first copy, the other copies,
// by the stage whose slice they copy.
__device__ unsigned long long g_issue[MAX_STAGES][3];
template <int MODE, int NBUF, int COPY, int WAIT = 0, int TRACE = 0>
__global__ void __launch_bounds__(THREADS, 1) skeleton(const int4* __restrict__ w, Plan plan, float* act, unsigned* bar, unsigned* errors, int* sink) {
    extern __shared__ int4 ring[];  // [NBUF][SLICE_INT4]
    __shared__ float xs[2][1024];   // the exchanged activation (MODE 1, 3), double-buffered
    __shared__ float xread[1024];
    __shared__ int reduced;
    __shared__ unsigned long long xbar[2], rbar[NBUF > 0 ? NBUF : 1];
    __shared__ unsigned long long stage_off[MAX_STAGES + 1];  // int4s before each stage in a layer
    const bool clustered = MODE != 2;
    unsigned rank = clustered ? cg::this_cluster().block_rank() : blockIdx.x;
    unsigned blocks = clustered ? cg::this_cluster().num_blocks() : gridDim.x;
    int share = (plan.width + blocks - 1) / blocks;
    int width = share * blocks;
    int jobs = plan.layers * plan.stages;
    if (threadIdx.x == 0) {
        stage_off[0] = 0;
        for (int s = 0; s < plan.stages; ++s) stage_off[s + 1] = stage_off[s] + plan.stage_int4[s];
        reduced = 0;
        mbar_init(&xbar[0], 1);
        mbar_init(&xbar[1], 1);
        for (int b = 0; b < (NBUF > 0 ? NBUF : 1); ++b) mbar_init(&rbar[b], 1);
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    }
    if (clustered) cg::this_cluster().sync();
    else __syncthreads();
    auto slice = [&](int job, unsigned long long& start, unsigned& len) {
        int l = job / plan.stages, s = job % plan.stages;
        unsigned per = (unsigned)((stage_off[s + 1] - stage_off[s] + blocks - 1) / blocks);
        start = plan.base + l * stage_off[plan.stages] + stage_off[s] + (unsigned long long)rank * per;
        len = per;
    };
    constexpr int NR = NBUF > 0 ? NBUF : 1;
    auto issue = [&](int job) {
        if (job < jobs) {
            unsigned long long start;
            unsigned len;
            slice(job, start, len);
            int4* dst = ring + (job % NR) * SLICE_INT4;
            if (COPY == 0) {
                for (unsigned i = threadIdx.x; i < len; i += THREADS) cp_async16(dst + i, w + start + i);
            } else if (threadIdx.x == 0) {
                unsigned long long* b = &rbar[job % NR];
                long long ta = TRACE ? clock64() : 0;
                mbar_expect(b, len * 16);
                long long tb = TRACE ? clock64() : 0, tc = 0;
                for (unsigned i = 0; i < len; i += 512) {
                    bulk_copy(dst + i, w + start + i, min(512u, len - i) * 16, b);
                    if (TRACE && i == 0) tc = clock64();
                }
                if (TRACE && blockIdx.x == 0) {
                    unsigned long long* g = g_issue[job % plan.stages];
                    long long td = clock64();
                    atomicAdd(&g[0], (unsigned long long)(tb - ta));
                    atomicAdd(&g[1], (unsigned long long)(tc - tb));
                    atomicAdd(&g[2], (unsigned long long)(td - tc));
                }
            }
        }
        if (COPY == 0) cp_commit();
    };
    if (NBUF > 0)
        for (int d = 0; d < NBUF - 1; ++d) issue(d);
    int acc_all = 0;
    float carry = 0.0f;
    unsigned bad = 0;
    for (int job = 0; job < jobs; ++job) {
        long long t0 = TRACE ? clock64() : 0, t1 = 0, t2 = 0, t3 = 0;
        int acc = 0;
        int buf = job & 1;
        if (MODE == 3 && threadIdx.x == 0) mbar_expect(&xbar[buf], width * 4);
        unsigned long long start;
        unsigned len;
        slice(job, start, len);
        if (NBUF > 0) {
            issue(job + NBUF - 1);
            if (TRACE) t1 = clock64();
            if (COPY == 0) {
                cp_wait<(NBUF > 0 ? NBUF - 1 : 0)>();
                __syncthreads();
            } else if (WAIT == 1) {
                if (threadIdx.x == 0) mbar_wait(&rbar[job % NR], (job / NR) & 1);
                __syncthreads();
            } else {
                mbar_wait(&rbar[job % NR], (job / NR) & 1);
            }
            if (TRACE) t2 = clock64();
            const int4* src = ring + (job % NR) * SLICE_INT4;
            for (unsigned i = threadIdx.x; i < len; i += THREADS) {
                int4 v = src[i];
                acc ^= v.x ^ v.y ^ v.z ^ v.w;
            }
        } else {
#pragma unroll 8
            for (unsigned i = threadIdx.x; i < len; i += THREADS) {
                int4 v = __ldcs(w + start + i);
                acc ^= v.x ^ v.y ^ v.z ^ v.w;
            }
        }
        for (int o = 16; o > 0; o >>= 1) acc ^= __shfl_xor_sync(0xffffffffu, acc, o);
        if ((threadIdx.x & 31) == 0) atomicXor(&reduced, acc);
        __syncthreads();
        if (TRACE) t3 = clock64();
        acc_all ^= reduced;
        // This block's share of the stage's output, carrying what the last exchange read.
        if (threadIdx.x < share && MODE < 4) {
            int index = rank * share + threadIdx.x;
            float value = expected(job, index) + carry;
            if (MODE == 1) {
                cg::cluster_group cluster = cg::this_cluster();
                for (unsigned b = 0; b < blocks; ++b) cluster.map_shared_rank(&xs[buf][0], b)[index] = value;
            } else if (MODE == 3) {
                for (unsigned b = 0; b < blocks; ++b) st_async(&xs[buf][index], &xbar[buf], b, value);
            } else {
                act[buf * 1024 + index] = value;
            }
        }
        if (MODE == 2) grid_barrier(bar, bar + 1, blocks);
        else if (MODE == 3) mbar_wait(&xbar[buf], (job >> 1) & 1);
        else if (MODE == 5) __syncthreads();
        else cg::this_cluster().sync();
        if (MODE < 4) {
            for (int i = threadIdx.x; i < width; i += THREADS) {
                float v = MODE == 1 || MODE == 3 ? xs[buf][i] : __ldcg(act + buf * 1024 + i);
                if (v != expected(job, i)) ++bad;
                xread[i] = v;
            }
            __syncthreads();
            carry = xread[(threadIdx.x * 7 + job) % width] - expected(job, (threadIdx.x * 7 + job) % width);
        }
        if (TRACE && blockIdx.x == 0 && threadIdx.x == 0) {
            unsigned long long* g = g_trace[job % plan.stages];
            long long t4 = clock64();
            atomicAdd(&g[0], (unsigned long long)(t1 - t0));
            atomicAdd(&g[1], (unsigned long long)(t2 - t1));
            atomicAdd(&g[2], (unsigned long long)(t3 - t2));
            atomicAdd(&g[3], (unsigned long long)(t4 - t3));
        }
    }
    if (NBUF > 0 && COPY == 0) cp_wait<0>();
    if (bad) atomicAdd(errors, bad);
    if (acc_all == 0x5eed && threadIdx.x == 0) sink[blockIdx.x] = acc_all;
    if (clustered) cg::this_cluster().sync();  // no block leaves while others may store into it
}

static float time_ms(cudaEvent_t a, cudaEvent_t b) {
    float ms;
    CK(cudaEventElapsedTime(&ms, a, b));
    return ms;
}

template <typename Launch>
static float median_ms(int reps, Launch launch) {
    cudaEvent_t a, b;
    CK(cudaEventCreate(&a));
    CK(cudaEventCreate(&b));
    std::vector<float> t;
    launch(-1);  // warm: module load, first touch
    CK(cudaDeviceSynchronize());
    for (int r = 0; r < reps; ++r) {
        CK(cudaEventRecord(a));
        launch(r);
        CK(cudaEventRecord(b));
        CK(cudaEventSynchronize(b));
        t.push_back(time_ms(a, b));
    }
    CK(cudaGetLastError());
    std::sort(t.begin(), t.end());
    return t[t.size() / 2];
}

template <typename Kernel, typename... Args>
static void launch_cluster(Kernel k, int blocks, int cluster, size_t smem, Args... args) {
    cudaLaunchConfig_t cfg = {};
    cfg.gridDim = dim3(blocks);
    cfg.blockDim = dim3(THREADS);
    cfg.dynamicSmemBytes = smem;
    cudaLaunchAttribute attr[1];
    attr[0].id = cudaLaunchAttributeClusterDimension;
    attr[0].val.clusterDim.x = cluster;
    attr[0].val.clusterDim.y = 1;
    attr[0].val.clusterDim.z = 1;
    cfg.attrs = attr;
    cfg.numAttrs = cluster > 0 ? 1 : 0;
    CK(cudaLaunchKernelEx(&cfg, k, args...));
}

template <int MODE, int NBUF, int COPY = 0, int WAIT = 0, int TRACE = 0>
static void run_skeleton(const char* name, int blocks, const int4* w, size_t w_int4, Plan plan, float* act, unsigned* bar, unsigned* errors, int* sink, bool warm = false) {
    auto k = skeleton<MODE, NBUF, COPY, WAIT, TRACE>;
    size_t smem = (NBUF > 0 ? NBUF : 1) * SLICE_INT4 * sizeof(int4);
    CK(cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
    if (MODE != 2) CK(cudaFuncSetAttribute(k, cudaFuncAttributeNonPortableClusterSizeAllowed, 1));
    unsigned long long layer_int4 = 0;
    for (int s = 0; s < plan.stages; ++s) {
        layer_int4 += plan.stage_int4[s];
        if (NBUF > 0 && (plan.stage_int4[s] + blocks - 1) / blocks > (unsigned)SLICE_INT4) {
            printf("| %s | %d | slice too large for the ring |\n", name, blocks);
            return;
        }
    }
    unsigned long long run_int4 = layer_int4 * plan.layers + 1024;
    CK(cudaMemset(errors, 0, 4));
    CK(cudaMemset(bar, 0, 8));
    float ms[2];
    for (int with_layers = 0; with_layers < 2; ++with_layers) {
        Plan p = plan;
        if (!with_layers) p.layers = 0;
        ms[with_layers] = median_ms(15, [&](int rep) {
            p.base = warm ? 0 : ((unsigned long long)(rep + 1) * run_int4) % (w_int4 - run_int4);
            launch_cluster(k, blocks, MODE == 2 ? 0 : blocks, smem, w, p, act, bar, errors, sink);
        });
    }
    unsigned err;
    CK(cudaMemcpy(&err, errors, 4, cudaMemcpyDeviceToHost));
    double token_us = (ms[1] - ms[0]) * 1000.0;
    double bytes = (double)layer_int4 * 16.0 * plan.layers;
    printf("| %s | %d | %.1f | %.2f | %.2f | %.0f | %u |\n", name, blocks, token_us, token_us / plan.layers,
           token_us / plan.layers / plan.stages, bytes / token_us / 1e3, err);
    if (!TRACE) return;
    // One more run, cold, with the counters cleared: block 0's cycles a job by stage and part.
    unsigned long long zero[MAX_STAGES][4] = {}, got[MAX_STAGES][4];
    CK(cudaMemcpyToSymbol(g_trace, zero, sizeof zero));
    CK(cudaMemcpyToSymbol(g_issue, zero, sizeof(unsigned long long) * MAX_STAGES * 3));
    Plan p = plan;
    p.base = ((unsigned long long)20 * run_int4) % (w_int4 - run_int4);
    launch_cluster(k, blocks, MODE == 2 ? 0 : blocks, smem, w, p, act, bar, errors, sink);
    CK(cudaDeviceSynchronize());
    CK(cudaMemcpyFromSymbol(got, g_trace, sizeof got));
    unsigned long long issue[MAX_STAGES][3];
    CK(cudaMemcpyFromSymbol(issue, g_issue, sizeof issue));
    for (int s = 0; s < plan.stages; ++s)
        printf("|   stage %d (%u B a block): cycles a job: issue %llu, wait %llu, read-back %llu, rest %llu | | | | | | |\n", s,
               (plan.stage_int4[s] + blocks - 1) / blocks * 16, got[s][0] / plan.layers, got[s][1] / plan.layers,
               got[s][2] / plan.layers, got[s][3] / plan.layers);
    if (COPY == 1)
        for (int s = 0; s < plan.stages; ++s)
            printf("|   stage %d's copies (%u of 8 KB or less): cycles: expect_tx %llu, first copy %llu, the rest %llu | | | | | | |\n", s,
                   ((plan.stage_int4[s] + blocks - 1) / blocks + 511) / 512, issue[s][0] / plan.layers, issue[s][1] / plan.layers, issue[s][2] / plan.layers);
}

int main(int argc, char** argv) {
    bool trace_only = argc > 1 && std::string(argv[1]) == "trace";  // session 36: the last section alone
    int dev = 0, sms = 0;
    CK(cudaSetDevice(dev));
    cudaDeviceProp prop;
    CK(cudaGetDeviceProperties(&prop, dev));
    sms = prop.multiProcessorCount;
    printf("# %s, %d SMs, L2 %d MB\n\n", prop.name, sms, prop.l2CacheSize >> 20);
    int* sink;
    unsigned *bar, *errors;
    float* act;
    CK(cudaMalloc(&sink, 4096 * sizeof(int)));
    CK(cudaMalloc(&bar, 64));
    CK(cudaMalloc(&errors, 64));
    CK(cudaMalloc(&act, 2 * 1024 * sizeof(float)));
    CK(cudaMemset(bar, 0, 64));
    const size_t w_bytes = 2ull << 30;
    int4* w;
    CK(cudaMalloc(&w, w_bytes));
    CK(cudaMemset(w, 0x5a, w_bytes));
    size_t w_int4 = w_bytes / 16;

    {
        unsigned long long* cr;
        CK(cudaMalloc(&cr, 16));
        clock_rate<<<16, THREADS>>>(cr);
        unsigned long long h[2];
        CK(cudaMemcpy(h, cr, 16, cudaMemcpyDeviceToHost));
        printf("SM clock with 16 blocks spinning: %.0f MHz\n\n", (double)h[0] * 1e3 / (double)h[1]);
    }
    if (!trace_only) {
    printf("## One barrier\n\n| barrier | blocks | ns each |\n| --- | --- | --- |\n");
    CK(cudaFuncSetAttribute(cluster_barrier_loop, cudaFuncAttributeNonPortableClusterSizeAllowed, 1));
    for (int c : {2, 8, 16}) {
        float t0 = median_ms(9, [&](int) { launch_cluster(cluster_barrier_loop, c, c, 0, 0, sink); });
        float t1 = median_ms(9, [&](int) { launch_cluster(cluster_barrier_loop, c, c, 0, 20000, sink); });
        printf("| barrier.cluster | %d | %.0f |\n", c, (t1 - t0) * 1e6 / 20000);
    }
    {
        float t0 = median_ms(9, [&](int) { grid_barrier_loop<<<sms, THREADS>>>(0, bar, sink); });
        float t1 = median_ms(9, [&](int) { grid_barrier_loop<<<sms, THREADS>>>(20000, bar, sink); });
        printf("| counter (grid) | %d | %.0f |\n", sms, (t1 - t0) * 1e6 / 20000);
    }

    printf("\n## Cold streaming (%d MB a run, 8 x 16 B loads in flight a thread, %d threads)\n\n", 64, THREADS);
    printf("| blocks | GB/s | GB/s an SM |\n| --- | --- | --- |\n");
    for (int blocks : {1, 16, sms}) {
        unsigned long long per = (64ull << 20) / 16 / blocks;
        float ms = median_ms(9, [&](int rep) {
            size_t off = ((size_t)(rep + 1) * (64ull << 20) / 16) % (w_int4 - per * blocks);
            stream_read<<<blocks, THREADS>>>(w + off, per, sink);
        });
        double gbs = (double)per * blocks * 16 / (ms * 1e6);
        printf("| %d | %.0f | %.1f |\n", blocks, gbs, gbs / blocks);
    }

    printf("\n## Cold streaming by bulk copies (16 KB pieces, 8 in flight a block)\n\n| blocks | GB/s | GB/s an SM |\n| --- | --- | --- |\n");
    CK(cudaFuncSetAttribute(stream_bulk, cudaFuncAttributeMaxDynamicSharedMemorySize, 8 * 16384));
    for (int blocks : {1, 16, sms}) {
        unsigned long long per = (64ull << 20) / blocks / 16384 * 16384;
        float ms = median_ms(9, [&](int rep) {
            size_t off = ((size_t)(rep + 1) * (64ull << 20) / 16) % (w_int4 - per / 16 * blocks);
            stream_bulk<<<blocks, THREADS, 8 * 16384>>>(w + off, per, sink);
        });
        double gbs = (double)per * blocks / (ms * 1e6);
        printf("| %d | %.0f | %.1f |\n", blocks, gbs, gbs / blocks);
    }

    }
    // smollm2-135m q4_0 at ~640 positions: qkv, attention's f32 K/V, o, gate/up, down (bytes).
    Plan smol = {};
    smol.layers = 30;
    smol.stages = 5;
    const unsigned stage_bytes[5] = {576u * 960 * 9 / 16, 3u * 640 * 64 * 4 * 2, 576u * 576 * 9 / 16, 2u * 1536 * 576 * 9 / 16, 576u * 1536 * 9 / 16};
    for (int s = 0; s < 5; ++s) smol.stage_int4[s] = (stage_bytes[s] + 15) / 16;
    smol.width = 576;
    Plan empty = smol;
    for (int s = 0; s < 5; ++s) empty.stage_int4[s] = 0;
    printf("\n## Layer skeleton, smollm2 q4_0 bytes (30 layers x 5 stages, %.2f MB a layer)\n\n",
           (stage_bytes[0] + stage_bytes[1] + stage_bytes[2] + stage_bytes[3] + stage_bytes[4]) / 1048576.0);
    if (!trace_only) {
    printf("| variant | blocks | us a token | us a layer | us a stage | GB/s | exchange errors |\n| --- | --- | --- | --- | --- | --- | --- |\n");
    run_skeleton<4, 0>("cluster barrier, nothing exchanged", 16, w, w_int4, empty, act, bar, errors, sink);
    run_skeleton<0, 0>("barriers only, cluster, global", 16, w, w_int4, empty, act, bar, errors, sink);
    run_skeleton<1, 0>("barriers only, cluster, dsmem", 16, w, w_int4, empty, act, bar, errors, sink);
    run_skeleton<3, 0>("st.async exchange only", 16, w, w_int4, empty, act, bar, errors, sink);
    run_skeleton<2, 0>("barriers only, grid, global", sms, w, w_int4, empty, act, bar, errors, sink);
    run_skeleton<0, 0>("cluster, global, loads after barrier", 16, w, w_int4, smol, act, bar, errors, sink);
    run_skeleton<1, 3>("cluster, dsmem, 2 stages ahead", 16, w, w_int4, smol, act, bar, errors, sink);
    run_skeleton<3, 3>("st.async, 2 stages ahead (cp.async)", 16, w, w_int4, smol, act, bar, errors, sink);
    run_skeleton<3, 2, 1>("st.async, 1 stage ahead (bulk)", 16, w, w_int4, smol, act, bar, errors, sink);
    run_skeleton<3, 3, 1>("st.async, 2 stages ahead (bulk)", 16, w, w_int4, smol, act, bar, errors, sink);
    run_skeleton<4, 3, 1>("nothing exchanged, 2 stages ahead (bulk)", 16, w, w_int4, smol, act, bar, errors, sink);
    run_skeleton<5, 3, 1>("no barrier, nothing exchanged, 2 stages ahead (bulk)", 16, w, w_int4, smol, act, bar, errors, sink);
    run_skeleton<5, 3, 0>("no barrier, nothing exchanged, 2 stages ahead (cp.async)", 16, w, w_int4, smol, act, bar, errors, sink);
    run_skeleton<5, 0>("no barrier, nothing exchanged, loads after", 16, w, w_int4, smol, act, bar, errors, sink);
    Plan warm10 = smol;
    warm10.layers = 10;
    run_skeleton<3, 3, 1>("st.async, 2 stages ahead (bulk), 10 layers cold", 16, w, w_int4, warm10, act, bar, errors, sink);
    run_skeleton<3, 3, 1>("st.async, 2 stages ahead (bulk), 10 layers in L2", 16, w, w_int4, warm10, act, bar, errors, sink, true);
    run_skeleton<5, 3, 1>("no barrier, nothing exchanged, bulk, 10 layers in L2", 16, w, w_int4, warm10, act, bar, errors, sink, true);
    run_skeleton<2, 3>("grid, global, 2 stages ahead", sms, w, w_int4, smol, act, bar, errors, sink);
    }
    printf("\n## Where a stage's time goes (session 36): block 0's cycles a job, by stage\n\n");
    printf("| variant | blocks | us a token | us a layer | us a stage | GB/s | exchange errors |\n| --- | --- | --- | --- | --- | --- | --- |\n");
    run_skeleton<5, 3, 1, 0, 1>("no barrier, nothing exchanged, bulk 2 ahead, all threads wait", 16, w, w_int4, smol, act, bar, errors, sink);
    run_skeleton<5, 3, 1, 1, 1>("no barrier, nothing exchanged, bulk 2 ahead, thread 0 waits", 16, w, w_int4, smol, act, bar, errors, sink);
    run_skeleton<3, 3, 1, 0, 1>("st.async, bulk 2 ahead, all threads wait", 16, w, w_int4, smol, act, bar, errors, sink);
    run_skeleton<3, 3, 1, 1, 1>("st.async, bulk 2 ahead, thread 0 waits", 16, w, w_int4, smol, act, bar, errors, sink);
    return 0;
}
