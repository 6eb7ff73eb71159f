// The CUDA backend's kernels, compiled once at run time by NVRTC (see `kernels.rs`) and loaded
// into every device's context. Each kernel exists for `float` (suffix `_f32`) and `double`
// (`_f64`). Tensors reach a kernel as a base pointer plus a `Layout` (shape, strides, offset in
// elements), so views, transposes and broadcasts (stride 0) run without a copy first.
//
// The `op` codes mirror the Rust enums in `backend/op.rs`; `kernels.rs` maps one to the other.
// Reductions combine in a fixed order (fixed block size, fixed tree), so the same input gives
// the same bits on every run, as on the CPU.

#define MAX_DIMS 8
#define BLOCK 256

typedef unsigned long long u64;

struct Layout {
    u64 ndim;
    u64 offset;
    u64 shape[MAX_DIMS];
    u64 strides[MAX_DIMS];
};

// The storage offset of element `i` (C order) of `l`.
__device__ __forceinline__ u64 at(const Layout& l, u64 i) {
    u64 off = l.offset;
    for (int d = (int)l.ndim - 1; d >= 0; --d) {
        u64 s = l.shape[d];
        off += (i % s) * l.strides[d];
        i /= s;
    }
    return off;
}

// ----- math, overloaded per precision (NVRTC's math library is C-style: expf vs exp) ---------

__device__ __forceinline__ float m_exp(float x) { return expf(x); }
__device__ __forceinline__ double m_exp(double x) { return exp(x); }
__device__ __forceinline__ float m_log(float x) { return logf(x); }
__device__ __forceinline__ double m_log(double x) { return log(x); }
__device__ __forceinline__ float m_sin(float x) { return sinf(x); }
__device__ __forceinline__ double m_sin(double x) { return sin(x); }
__device__ __forceinline__ float m_cos(float x) { return cosf(x); }
__device__ __forceinline__ double m_cos(double x) { return cos(x); }
__device__ __forceinline__ float m_tanh(float x) { return tanhf(x); }
__device__ __forceinline__ double m_tanh(double x) { return tanh(x); }
__device__ __forceinline__ float m_sqrt(float x) { return sqrtf(x); }
__device__ __forceinline__ double m_sqrt(double x) { return sqrt(x); }
__device__ __forceinline__ float m_abs(float x) { return fabsf(x); }
__device__ __forceinline__ double m_abs(double x) { return fabs(x); }
__device__ __forceinline__ float m_pow(float x, float y) { return powf(x, y); }
__device__ __forceinline__ double m_pow(double x, double y) { return pow(x, y); }

template <typename T> __device__ __forceinline__ bool is_nan(T x) { return x != x; }

// -inf, spelled through its bits (NVRTC has no <math.h> macros such as INFINITY).
template <typename T> __device__ __forceinline__ T neg_inf();
template <> __device__ __forceinline__ float neg_inf<float>() { return __int_as_float((int)0xff800000u); }
template <> __device__ __forceinline__ double neg_inf<double>() {
    return __longlong_as_double((long long)0xfff0000000000000ull);
}

// -1, 0 or 1 by the sign of `x`; ±0 and NaN are their own sign.
template <typename T> __device__ __forceinline__ T sign_of(T x) {
    return x > T(0) ? T(1) : (x < T(0) ? T(-1) : x);
}

// UnaryOp, in declaration order.
template <typename T> __device__ T unary_op(int op, T x) {
    switch (op) {
    case 0: return -x;
    case 1: return m_exp(x);
    case 2: return m_log(x);
    case 3: return m_sin(x);
    case 4: return m_cos(x);
    case 5: return m_tanh(x);
    case 6: return T(1) / (T(1) + m_exp(-x));
    case 7: return (x > T(0) || is_nan(x)) ? x : T(0);
    case 8: return m_sqrt(x);
    case 9: return m_abs(x);
    case 10: return sign_of(x);
    default: return x > T(0) ? T(1) : T(0);
    }
}

// BinaryOp, in declaration order.
template <typename T> __device__ T binary_op(int op, T a, T b) {
    switch (op) {
    case 0: return a + b;
    case 1: return a - b;
    case 2: return a * b;
    default: return a / b;
    }
}

// FusedOp, in declaration order: `g` is the incoming gradient, `s` what the forward saved.
template <typename T> __device__ T fused_op(int op, T g, T s, T e) {
    switch (op) {
    case 0: return g * (T(1) - s * s);
    case 1: return g * (s * (T(1) - s));
    case 2: return s > T(0) ? g : T(0);
    case 3: return g / (s + s);
    case 4: return g * sign_of(s);
    case 5: return g * m_cos(s);
    case 6: return g * (-m_sin(s));
    default: return e == T(2) ? g * (s + s) : g * (e * m_pow(s, e - T(1)));
    }
}

template <typename T> __device__ T pow_scalar(T x, T e) {
    if (e == T(1)) return x;
    if (e == T(2)) return x * x;
    if (e == T(0.5)) return m_sqrt(x);
    return m_pow(x, e);
}

#define GRID_STRIDE(i, n) \
    for (u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x; i < (n); i += (u64)blockDim.x * gridDim.x)

// ----- element-wise: every output is contiguous, inputs go through their layouts -------------

#define ELEMENTWISE(T, S)                                                                          \
    extern "C" __global__ void unary_##S(int op, Layout lx, const T* x, T* y, u64 n) {             \
        GRID_STRIDE(i, n) { y[i] = unary_op<T>(op, x[at(lx, i)]); }                                \
    }                                                                                              \
    extern "C" __global__ void pow_scalar_##S(Layout lx, const T* x, T e, T* y, u64 n) {           \
        GRID_STRIDE(i, n) { y[i] = pow_scalar<T>(x[at(lx, i)], e); }                              \
    }                                                                                              \
    extern "C" __global__ void binary_##S(int op, Layout la, const T* a, Layout lb, const T* b,    \
                                          T* y, u64 n) {                                           \
        GRID_STRIDE(i, n) { y[i] = binary_op<T>(op, a[at(la, i)], b[at(lb, i)]); }                 \
    }                                                                                              \
    extern "C" __global__ void binary_scalar_##S(int op, Layout lx, const T* x, T s, int left,     \
                                                 T* y, u64 n) {                                    \
        GRID_STRIDE(i, n) {                                                                        \
            T v = x[at(lx, i)];                                                                    \
            y[i] = left ? binary_op<T>(op, s, v) : binary_op<T>(op, v, s);                         \
        }                                                                                          \
    }                                                                                              \
    extern "C" __global__ void fused_##S(int op, T e, Layout la, const T* a, Layout lb,            \
                                         const T* b, T* y, u64 n) {                                \
        GRID_STRIDE(i, n) { y[i] = fused_op<T>(op, a[at(la, i)], b[at(lb, i)], e); }               \
    }                                                                                              \
    /* In place: `d` is written through its own layout, `s` is broadcast to it. */                 \
    extern "C" __global__ void binary_inplace_##S(int op, Layout ld, T* d, Layout ls, const T* s,  \
                                                  u64 n) {                                         \
        GRID_STRIDE(i, n) {                                                                        \
            u64 o = at(ld, i);                                                                     \
            d[o] = binary_op<T>(op, d[o], s[at(ls, i)]);                                           \
        }                                                                                          \
    }                                                                                              \
    extern "C" __global__ void fill_##S(Layout ld, T* d, T v, u64 n) {                             \
        GRID_STRIDE(i, n) { d[at(ld, i)] = v; }                                                    \
    }                                                                                              \
    /* Element `i` of `s` to element `i` of `d`, each through its layout. */                       \
    extern "C" __global__ void copy_##S(Layout ld, T* d, Layout ls, const T* s, u64 n) {           \
        GRID_STRIDE(i, n) { d[at(ld, i)] = s[at(ls, i)]; }                                         \
    }                                                                                              \
    extern "C" __global__ void has_nan_##S(Layout lx, const T* x, int* flag, u64 n) {              \
        GRID_STRIDE(i, n) {                                                                        \
            if (is_nan(x[at(lx, i)])) *flag = 1;                                                   \
        }                                                                                          \
    }

ELEMENTWISE(float, f32)
ELEMENTWISE(double, f64)

extern "C" __global__ void cast_f32_f64(Layout lx, const float* x, double* y, u64 n) {
    GRID_STRIDE(i, n) { y[i] = (double)x[at(lx, i)]; }
}

extern "C" __global__ void cast_f64_f32(Layout lx, const double* x, float* y, u64 n) {
    GRID_STRIDE(i, n) { y[i] = (float)x[at(lx, i)]; }
}

// ----- reductions: one block per output, a fixed tree over BLOCK partial sums ------------------

// Sums `vals[0..BLOCK)` in shared memory in a fixed order; the result is in `vals[0]`.
template <typename T> __device__ void block_sum(T* vals) {
    for (int width = BLOCK / 2; width > 0; width /= 2) {
        __syncthreads();
        if (threadIdx.x < width) vals[threadIdx.x] += vals[threadIdx.x + width];
    }
    __syncthreads();
}

template <typename T> __device__ void block_max(T* vals) {
    for (int width = BLOCK / 2; width > 0; width /= 2) {
        __syncthreads();
        if (threadIdx.x < width) {
            T a = vals[threadIdx.x], b = vals[threadIdx.x + width];
            vals[threadIdx.x] = (is_nan(a) || a >= b) ? a : b;
        }
    }
    __syncthreads();
}

// `lx` lists the kept dims first and the reduced dims last, so output `o` sums elements
// `o * k .. (o + 1) * k` of `lx` in C order.
#define REDUCE(T, S)                                                                               \
    extern "C" __global__ void sum_##S(Layout lx, const T* x, T* y, u64 m, u64 k) {                \
        __shared__ T part[BLOCK];                                                                  \
        for (u64 o = blockIdx.x; o < m; o += gridDim.x) {                                          \
            T acc = T(0);                                                                          \
            for (u64 r = threadIdx.x; r < k; r += BLOCK) acc += x[at(lx, o * k + r)];              \
            part[threadIdx.x] = acc;                                                               \
            block_sum<T>(part);                                                                    \
            if (threadIdx.x == 0) y[o] = part[0];                                                  \
            __syncthreads();                                                                       \
        }                                                                                          \
    }                                                                                              \
    /* Softmax over the middle dim of a contiguous [outer, d, inner] tensor, one block per lane. */\
    extern "C" __global__ void softmax_##S(const T* x, T* y, u64 outer, u64 d, u64 inner,          \
                                           int log_softmax) {                                      \
        __shared__ T part[BLOCK];                                                                  \
        for (u64 lane = blockIdx.x; lane < outer * inner; lane += gridDim.x) {                     \
            u64 base = (lane / inner) * d * inner + lane % inner;                                  \
            T mx = neg_inf<T>();                                                                   \
            for (u64 j = threadIdx.x; j < d; j += BLOCK) {                                         \
                T v = x[base + j * inner];                                                         \
                mx = (is_nan(mx) || mx >= v) ? mx : v;                                             \
            }                                                                                      \
            part[threadIdx.x] = mx;                                                                \
            block_max<T>(part);                                                                    \
            mx = part[0];                                                                          \
            __syncthreads();                                                                       \
            T acc = T(0);                                                                          \
            for (u64 j = threadIdx.x; j < d; j += BLOCK) acc += m_exp(x[base + j * inner] - mx);   \
            part[threadIdx.x] = acc;                                                               \
            block_sum<T>(part);                                                                    \
            T total = part[0];                                                                     \
            T log_total = m_log(total);                                                            \
            for (u64 j = threadIdx.x; j < d; j += BLOCK) {                                         \
                T z = x[base + j * inner] - mx;                                                    \
                y[base + j * inner] = log_softmax ? z - log_total : m_exp(z) / total;              \
            }                                                                                      \
            __syncthreads();                                                                       \
        }                                                                                          \
    }                                                                                              \
    /* The first maximum of each lane of a contiguous [outer, d, inner] tensor (NaN is the */      \
    /* maximum), one thread per lane. */                                                           \
    extern "C" __global__ void argmax_##S(const T* x, u64* out, u64 outer, u64 d, u64 inner) {     \
        GRID_STRIDE(lane, outer * inner) {                                                         \
            u64 base = (lane / inner) * d * inner + lane % inner;                                  \
            u64 best = 0;                                                                          \
            if (d == 0) {                                                                          \
                out[lane] = 0;                                                                     \
                continue;                                                                          \
            }                                                                                      \
            T bv = x[base];                                                                        \
            for (u64 j = 1; j < d && !is_nan(bv); ++j) {                                           \
                T v = x[base + j * inner];                                                         \
                if (is_nan(v) || v > bv) {                                                         \
                    bv = v;                                                                        \
                    best = j;                                                                      \
                }                                                                                  \
            }                                                                                      \
            out[lane] = best;                                                                      \
        }                                                                                          \
    }

REDUCE(float, f32)
REDUCE(double, f64)

// ----- indexing over contiguous [outer, d, inner] tensors --------------------------------------

#define INDEXING(T, S)                                                                             \
    /* y[o, j, i] = x[o, index[j], i] for a y of [outer, len, inner]. */                           \
    extern "C" __global__ void index_select_##S(const T* x, const u64* index, T* y, u64 outer,     \
                                                u64 d, u64 inner, u64 len) {                       \
        GRID_STRIDE(e, outer * len * inner) {                                                      \
            u64 i = e % inner, j = (e / inner) % len, o = e / (inner * len);                       \
            y[e] = x[(o * d + index[j]) * inner + i];                                              \
        }                                                                                          \
    }                                                                                              \
    /* y[o, r, i] = Σ over j with index[j] == r of g[o, j, i], summed in j order. */               \
    extern "C" __global__ void index_add_##S(const T* g, const u64* index, T* y, u64 outer, u64 d, \
                                             u64 inner, u64 len) {                                 \
        GRID_STRIDE(e, outer * d * inner) {                                                        \
            u64 i = e % inner, r = (e / inner) % d, o = e / (inner * d);                           \
            T acc = T(0);                                                                          \
            for (u64 j = 0; j < len; ++j)                                                          \
                if (index[j] == r) acc += g[(o * len + j) * inner + i];                            \
            y[e] = acc;                                                                            \
        }                                                                                          \
    }                                                                                              \
    /* y[lane] = x[o, index[lane], i] with lane = o * inner + i. */                                \
    extern "C" __global__ void gather_##S(const T* x, const u64* index, T* y, u64 outer, u64 d,    \
                                          u64 inner) {                                             \
        GRID_STRIDE(lane, outer * inner) {                                                         \
            y[lane] = x[((lane / inner) * d + index[lane]) * inner + lane % inner];                \
        }                                                                                          \
    }                                                                                              \
    /* The adjoint of gather, into a zeroed y of [outer, d, inner]. */                             \
    extern "C" __global__ void scatter_##S(const T* g, const u64* index, T* y, u64 outer, u64 d,   \
                                           u64 inner) {                                            \
        GRID_STRIDE(lane, outer * inner) {                                                         \
            y[((lane / inner) * d + index[lane]) * inner + lane % inner] = g[lane];                \
        }                                                                                          \
    }

INDEXING(float, f32)
INDEXING(double, f64)
