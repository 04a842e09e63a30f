// What does a fused FFN (gate/up and down in one kernel, down split by its columns so each
// block adds its partial output row into the residual) pay for its reduction? Prices the
// design before writing it (issue #8: the kernel boundary and cold start of the down
// projection, ~2-3 us a layer on llama-1b). Each block streams its share of the FFN's weight
// bytes from DRAM (plain 16-byte loads, 8 in flight a thread, a fresh region every launch so
// nothing hits L2), then hands `rows` partial sums to the output by one of:
//   none   nothing (one word a block),
//   store  plain stores into a block-private row (what a deterministic two-pass would write),
//   s64    red.global.add.s64 of a fixed-point value into one shared row (deterministic),
//   f32    red.global.add.f32 into one shared row,
//   v4f32  red.global.add.v4.f32 (sm_90) into one shared row.
// Times are per launch from a CUDA graph of LAUNCHES back-to-back launches (events, best of 6),
// launch cost included: compare the columns with each other and with the empty kernel's line.
// Build and run on the GPU machine: nvcc -O3 -arch=sm_90 -o split_k_atomics split_k_atomics.cu && ./split_k_atomics
#include <cuda_runtime.h>
#include <cstdio>
#include <algorithm>
#include <cstdlib>
#include <utility>
#include <vector>

#define CK(x)                                                                                   \
    do {                                                                                        \
        cudaError_t e_ = (x);                                                                   \
        if (e_ != cudaSuccess) {                                                                \
            fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_)); \
            exit(1);                                                                            \
        }                                                                                       \
    } while (0)

constexpr int THREADS = 256;
constexpr int LAUNCHES = 32;

enum Reduce { NONE, STORE, S64, F32, V4F32 };
const char* NAMES[] = {"none", "store", "s64", "f32", "v4f32"};

// Block b streams words [b * per, (b + 1) * per) of src (int4s), then reduces `rows` values.
template <int MODE>
__global__ void __launch_bounds__(THREADS) fused(const int4* src, long per, int rows, float* part, long long* acc, float* accf, int* sink) {
    const int4* p = src + blockIdx.x * per;
    int x = 0;
    for (long i = threadIdx.x; i < per; i += 8 * THREADS) {
        int4 v[8];
#pragma unroll
        for (int k = 0; k < 8; k++) v[k] = i + k * THREADS < per ? __ldcs(p + i + k * THREADS) : make_int4(0, 0, 0, 0);
#pragma unroll
        for (int k = 0; k < 8; k++) x ^= v[k].x ^ v[k].y ^ v[k].z ^ v[k].w;
    }
    float f = (float)(x & 0xff) * 1e-3f;
    if (MODE == NONE) {
        if (x == 0x12345678) sink[blockIdx.x] = x;
        return;
    }
    if (MODE == V4F32) {
        for (int r = 4 * threadIdx.x; r < rows; r += 4 * THREADS) {
            float* a = accf + r;
            asm volatile("red.global.add.v4.f32 [%0], {%1, %2, %3, %4};" ::"l"(a), "f"(f), "f"(f + 1.f), "f"(f + 2.f), "f"(f + 3.f) : "memory");
        }
        return;
    }
    for (int r = threadIdx.x; r < rows; r += THREADS) {
        float v = f + r;
        if (MODE == STORE) part[(long)blockIdx.x * rows + r] = v;
        if (MODE == S64) atomicAdd((unsigned long long*)acc + r, (unsigned long long)__float2ll_rn(v * 67108864.f));
        if (MODE == F32) atomicAdd(accf + r, v);
    }
}

__global__ void empty() {}

// One launch of `fused` with reduction `mode`.
void launch_mode(int mode, int blocks, cudaStream_t st, const int4* from, long per, int rows, float* part, long long* acc, float* accf, int* sink) {
    switch (mode) {
        case NONE: fused<NONE><<<blocks, THREADS, 0, st>>>(from, per, rows, part, acc, accf, sink); break;
        case STORE: fused<STORE><<<blocks, THREADS, 0, st>>>(from, per, rows, part, acc, accf, sink); break;
        case S64: fused<S64><<<blocks, THREADS, 0, st>>>(from, per, rows, part, acc, accf, sink); break;
        case F32: fused<F32><<<blocks, THREADS, 0, st>>>(from, per, rows, part, acc, accf, sink); break;
        default: fused<V4F32><<<blocks, THREADS, 0, st>>>(from, per, rows, part, acc, accf, sink); break;
    }
}

struct Shape {
    const char* name;
    int blocks;
    long bytes_per_block;
    int rows;
};

int main() {
    // llama-1b q4_0: gate/up 2 x 8192 x 2048 and down 2048 x 8192 at 18 bytes / 32 values,
    // over 256 blocks of one 32-value unit of the hidden row, or 128 of two. llama-8b q4_0:
    // 14336 hidden, 4096 wide, 224 blocks of two units or 112 of four. smollm2 q4_0: 1536
    // hidden, 576 wide, 48 blocks of one unit.
    std::vector<Shape> shapes = {
        {"llama-1b 256 x 1 unit", 256, (2L * 32 * 2048 + 2048 * 32) * 18 / 32, 2048},
        {"llama-1b 128 x 2 units", 128, (2L * 64 * 2048 + 2048 * 64) * 18 / 32, 2048},
        {"llama-8b 224 x 2 units", 224, (2L * 64 * 4096 + 4096 * 64) * 18 / 32, 4096},
        {"llama-8b 112 x 4 units", 112, (2L * 128 * 4096 + 4096 * 128) * 18 / 32, 4096},
        {"smollm2 48 x 1 unit", 48, (2L * 32 * 576 + 576 * 32) * 18 / 32, 576},
    };
    long most = 0;
    for (auto& s : shapes) most = std::max(most, (long)s.blocks * s.bytes_per_block);
    long region = (most + 4095) / 16 * 16;  // bytes a launch
    int4* src;
    CK(cudaMalloc(&src, region * LAUNCHES));
    CK(cudaMemset(src, 1, region * LAUNCHES));
    float *part, *accf;
    long long* acc;
    int* sink;
    CK(cudaMalloc(&part, 256L * 4096 * 4));
    CK(cudaMalloc(&acc, 4096 * 8));
    CK(cudaMalloc(&accf, 4096 * 4));
    CK(cudaMalloc(&sink, 4096 * 4));
    cudaStream_t st;
    CK(cudaStreamCreate(&st));
    cudaEvent_t a, b;
    CK(cudaEventCreate(&a));
    CK(cudaEventCreate(&b));
    auto time_graph = [&](auto launch_one) {
        cudaGraph_t g;
        cudaGraphExec_t ge;
        CK(cudaStreamBeginCapture(st, cudaStreamCaptureModeGlobal));
        for (int l = 0; l < LAUNCHES; l++) launch_one(l);
        CK(cudaStreamEndCapture(st, &g));
        CK(cudaGraphInstantiate(&ge, g, 0));
        float best = 1e30f;
        for (int rep = 0; rep < 7; rep++) {
            CK(cudaEventRecord(a, st));
            CK(cudaGraphLaunch(ge, st));
            CK(cudaEventRecord(b, st));
            CK(cudaEventSynchronize(b));
            float ms;
            CK(cudaEventElapsedTime(&ms, a, b));
            if (rep > 0) best = std::min(best, ms);
        }
        CK(cudaGraphExecDestroy(ge));
        CK(cudaGraphDestroy(g));
        return best * 1000.f / LAUNCHES;
    };
    printf("| shape | MB a launch | %s | %s | %s | %s | %s |\n", NAMES[0], NAMES[1], NAMES[2], NAMES[3], NAMES[4]);
    printf("| --- | --- | --- | --- | --- | --- | --- |\n");
    for (auto& s : shapes) {
        long per = s.bytes_per_block / 16;
        printf("| %s | %.1f |", s.name, s.blocks * s.bytes_per_block / 1e6);
        for (int mode = 0; mode < 5; mode++) {
            float us = time_graph([&](int l) { launch_mode(mode, s.blocks, st, src + l * (region / 16), per, s.rows, part, acc, accf, sink); });
            printf(" %.2f |", us);
        }
        printf("\n");
    }
    // The reductions alone (no bytes streamed).
    for (auto shape : {std::pair<int, int>{256, 2048}, std::pair<int, int>{224, 4096}}) {
        int blocks = shape.first, rows = shape.second;
        printf("| (no stream) %d blocks x %d rows | 0 |", blocks, rows);
        for (int mode = 0; mode < 5; mode++) printf(" %.2f |", time_graph([&](int) { launch_mode(mode, blocks, st, src, 0, rows, part, acc, accf, sink); }));
        printf("\n");
    }
    float e = time_graph([&](int) { empty<<<1, 32, 0, st>>>(); });
    printf("\nempty kernel in the graph: %.2f us a launch\n", e);
    return 0;
}
