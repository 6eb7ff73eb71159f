// The floor under a small CUDA op on this machine, measured with the driver API alone (no
// framework): the host time of one cuLaunchKernel of an empty kernel taking the same arguments
// as this project's element-wise kernels (a 152-byte layout struct, pointers, a count), and of a
// stream-ordered allocation and free. `harnesses/cuda_overhead.rs` prints the same op through the
// engine ("breakdown_*"); the difference is what the library adds.
//
//     nvcc -O2 -o launch_floor benches/launch_floor.cu -lcuda && ./launch_floor
//
// Not part of the build or the tests.

#include <chrono>
#include <cstdio>
#include <cuda.h>

struct Layout {
    unsigned long long ndim, offset, shape[8], strides[8], index32;
};

extern "C" __global__ void empty(int op, Layout l, const float* x, float s, int left, float* y,
                                 unsigned long long n, int vec) {}

#define CHECK(call)                                                                           \
    do {                                                                                      \
        CUresult r = (call);                                                                  \
        if (r != CUDA_SUCCESS) {                                                              \
            const char* s;                                                                    \
            cuGetErrorString(r, &s);                                                          \
            std::printf("%s failed: %s\n", #call, s);                                         \
            return 1;                                                                         \
        }                                                                                     \
    } while (0)

int main() {
    const int n = 20000;
    CHECK(cuInit(0));
    CUdevice dev;
    CHECK(cuDeviceGet(&dev, 0));
    CUcontext ctx;
    CHECK(cuDevicePrimaryCtxRetain(&ctx, dev));
    CHECK(cuCtxSetCurrent(ctx));
    // The runtime registered `empty` in this context; take its driver handle.
    cudaFunction_t rf;
    if (cudaGetFuncBySymbol(&rf, (const void*)empty) != cudaSuccess) return 1;
    CUfunction f = (CUfunction)rf;
    CUdeviceptr buf;
    CHECK(cuMemAlloc(&buf, 1 << 20));
    Layout l = {};
    int op = 2, left = 0, vec = 0;
    float s = 2.0f;
    unsigned long long count = 1;
    CUdeviceptr x = buf, y = buf + 512;
    void* args[] = {&op, &l, &x, &s, &left, &y, &count, &vec};
    using clock = std::chrono::steady_clock;
    for (int round = 0; round < 2; ++round) {
        CHECK(cuCtxSynchronize());
        auto t0 = clock::now();
        for (int i = 0; i < n; ++i) CHECK(cuLaunchKernel(f, 1, 1, 1, 256, 1, 1, 0, 0, args, nullptr));
        auto t1 = clock::now();
        CHECK(cuCtxSynchronize());
        auto t2 = clock::now();
        for (int i = 0; i < n; ++i) {
            CUdeviceptr p;
            CHECK(cuMemAllocAsync(&p, 512, 0));
            CHECK(cuMemFreeAsync(p, 0));
        }
        CHECK(cuCtxSynchronize());
        auto t3 = clock::now();
        CUevent e;
        auto t4 = clock::now();
        for (int i = 0; i < n; ++i) {
            CHECK(cuEventCreate(&e, 0));
            CHECK(cuEventDestroy(e));
        }
        auto t5 = clock::now();
        auto us = [&](auto a, auto b) {
            return std::chrono::duration<double, std::micro>(b - a).count() / n;
        };
        if (round == 1) {
            std::printf("launch_empty_kernel_us=%.2f\n", us(t0, t1));
            std::printf("launch_then_drain_us=%.2f\n", us(t0, t2));
            std::printf("alloc_free_async_pair_us=%.2f\n", us(t2, t3));
            std::printf("event_create_destroy_pair_us=%.2f\n", us(t4, t5));
        }
    }
    return 0;
}
