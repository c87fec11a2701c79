/* bench/cuda_launch_floor.cu - what one launch costs on a GPU machine,
 * whatever library makes it: an empty kernel launched 30 at a time to a
 * sync (as dlaccel-bench --pipeline 30 times its replays), the same with
 * 2 KiB of parameters (a compiled one kernel passes its copies' addresses
 * by value), and a CUDA graph of that one kernel node. The tiny MLP's
 * target (<= 10 us a replayed step) sits on top of this floor: a replay is
 * one such launch plus the host's own work.
 *
 *   nvcc -O2 -arch=sm_80 -o cuda_launch_floor bench/cuda_launch_floor.cu
 *   ./cuda_launch_floor          (medians of 7 rounds of 3000 launches, us)
 */
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cuda_runtime.h>

struct big_params {
    unsigned long long word[256]; /* 2 KiB */
};

__global__ void empty_kernel(void) {}

__global__ void big_kernel(big_params p, unsigned long long *sink)
{
    /* Reads one word so the parameters are not dead; writes only when a
     * value that never occurs turns up. */
    if (p.word[threadIdx.x & 255] == 0x5eedULL && sink)
        *sink = 1;
}

#define CHECK(x)                                                                                   \
    do {                                                                                           \
        cudaError_t e_ = (x);                                                                      \
        if (e_ != cudaSuccess) {                                                                   \
            std::fprintf(stderr, "%s: %s\n", #x, cudaGetErrorString(e_));                          \
            return 1;                                                                              \
        }                                                                                          \
    } while (0)

static double now_us(void)
{
    using namespace std::chrono;
    return duration<double, std::micro>(steady_clock::now().time_since_epoch()).count();
}

enum { ROUNDS = 7, LAUNCHES = 3000, PIPELINE = 30 };

/* Medians of ROUNDS rounds, each LAUNCHES launches with a sync every
 * PIPELINE, in us a launch. launch() returns a CUDA error. */
template <typename F> static double floor_us(cudaStream_t s, F launch, cudaError_t *err)
{
    double r[ROUNDS];
    for (int w = 0; w < 100; w++)
        if ((*err = launch()) != cudaSuccess)
            return 0;
    cudaStreamSynchronize(s);
    for (int k = 0; k < ROUNDS; k++) {
        const double t0 = now_us();
        for (int i = 0; i < LAUNCHES; i++) {
            if ((*err = launch()) != cudaSuccess)
                return 0;
            if ((i + 1) % PIPELINE == 0)
                cudaStreamSynchronize(s);
        }
        cudaStreamSynchronize(s);
        r[k] = (now_us() - t0) / LAUNCHES;
    }
    std::sort(r, r + ROUNDS);
    return r[ROUNDS / 2];
}

int main(void)
{
    cudaDeviceProp prop;
    CHECK(cudaGetDeviceProperties(&prop, 0));
    cudaStream_t s;
    CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    big_params p = {};
    cudaError_t err = cudaSuccess;

    const double empty = floor_us(s, [&] {
        empty_kernel<<<1, 32, 0, s>>>();
        return cudaGetLastError();
    }, &err);
    CHECK(err);
    const double big = floor_us(s, [&] {
        big_kernel<<<1, 32, 0, s>>>(p, nullptr);
        return cudaGetLastError();
    }, &err);
    CHECK(err);

    cudaGraph_t graph;
    cudaGraphExec_t exec;
    CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
    big_kernel<<<1, 32, 0, s>>>(p, nullptr);
    CHECK(cudaStreamEndCapture(s, &graph));
    CHECK(cudaGraphInstantiate(&exec, graph, 0));
    const double graphed = floor_us(s, [&] { return cudaGraphLaunch(exec, s); }, &err);
    CHECK(err);

    std::printf("launch floor on %s, %d launches to a sync, medians of %d rounds of %d: "
                "empty kernel %.2f us, 2 KiB of parameters %.2f us, one-node graph %.2f us\n",
                prop.name, PIPELINE, ROUNDS, LAUNCHES, empty, big, graphed);
    cudaGraphExecDestroy(exec);
    cudaGraphDestroy(graph);
    cudaStreamDestroy(s);
    return 0;
}
