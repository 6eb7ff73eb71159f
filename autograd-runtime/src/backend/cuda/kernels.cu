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
    // 1 when every element index fits 32 bits (the element count is below 2^32).
    u64 index32;
};

// The storage offset of element `i` (C order) of `l`. The host merges the dims it can
// (`KernelLayout::new`), so a dense tensor, or any evenly strided one, arrives with one dim and
// costs no division; otherwise 32-bit division where the indices allow (64-bit division is a
// long emulated sequence on the GPU, and made element-wise kernels compute-bound).
__device__ __forceinline__ u64 at(const Layout& l, u64 i) {
    if (l.ndim <= 1) return l.offset + i * l.strides[0];
    u64 off = l.offset;
    if (l.index32) {
        unsigned int j = (unsigned int)i;
        for (int d = (int)l.ndim - 1; d >= 0; --d) {
            unsigned int s = (unsigned int)l.shape[d];
            off += (u64)(j % s) * l.strides[d];
            j /= s;
        }
        return off;
    }
    for (int d = (int)l.ndim - 1; d >= 0; --d) {
        u64 s = l.shape[d];
        off += (i % s) * l.strides[d];
        i /= s;
    }
    return off;
}

// The math (`m_*`, `is_nan`, `sign_of`, `unary_op`, `binary_op`, `pow_scalar`) and
// `GRID_STRIDE` are in `math.cuh`, compiled ahead of this file (`kernels::SOURCE`) and of
// every generated kernel.

// -inf, spelled through its bits (NVRTC has no <math.h> macros such as INFINITY).
template <typename T> __device__ __forceinline__ T neg_inf();
template <> __device__ __forceinline__ float neg_inf<float>() { return __int_as_float((int)0xff800000u); }
template <> __device__ __forceinline__ double neg_inf<double>() {
    return __longlong_as_double((long long)0xfff0000000000000ull);
}


// GradFormula, in declaration order: `g` is the incoming gradient, `s` what the forward saved.
template <typename T> __device__ T grad_formula_op(int op, T g, T s, T e) {
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

// ----- packs: 16 bytes per load and store --------------------------------------------------
//
// When every operand of an element-wise kernel is a dense run, or a row broadcast down a matrix
// (strides [0, 1], the bias of a linear layer) whose rows are a whole number of packs, and every
// address is 16-byte aligned, the host passes `vec = 1` and launches one thread per pack: each
// thread moves PACK(T) elements with one 16-byte load per operand and one store (PyTorch's
// vectorized elementwise kernel). Same formulas, same bits; only the memory traffic changes.

template <typename T> struct alignas(16) Pack { T v[16 / sizeof(T)]; };
#define PACK(T) ((int)(16 / sizeof(T)))

// Pack `p` of an operand laid out as the host checked: dense from `l.offset` (ndim <= 1), or a
// row of length `l.shape[1]` repeated (ndim 2).
template <typename T> __device__ __forceinline__ Pack<T> load_pack(const Layout& l, const T* x, u64 p) {
    u64 e = p * PACK(T);
    if (l.ndim == 2) e = l.index32 ? (u64)((unsigned int)e % (unsigned int)l.shape[1]) : e % l.shape[1];
    return *reinterpret_cast<const Pack<T>*>(x + l.offset + e);
}

template <typename T> __device__ __forceinline__ void store_pack(T* y, u64 p, const Pack<T>& v) {
    *reinterpret_cast<Pack<T>*>(y + p * PACK(T)) = v;
}

// The elements past the last whole pack, one per thread (dense operands only: a row broadcast
// has whole packs by the host's check).
#define PACK_TAIL(i, n, T) \
    GRID_STRIDE(i##_tail, (n) % PACK(T)) if (u64 i = (n) / PACK(T) * PACK(T) + i##_tail; true)

// ----- element-wise: every output is contiguous, inputs go through their layouts -------------

#define ELEMENTWISE(T, S)                                                                          \
    extern "C" __global__ void unary_##S(int op, Layout lx, const T* x, T* y, u64 n, int vec) {    \
        if (vec) {                                                                                 \
            GRID_STRIDE(p, n / PACK(T)) {                                                          \
                Pack<T> a = load_pack<T>(lx, x, p), r;                                             \
                for (int k = 0; k < PACK(T); ++k) r.v[k] = unary_op<T>(op, a.v[k]);                \
                store_pack<T>(y, p, r);                                                            \
            }                                                                                      \
            PACK_TAIL(i, n, T) { y[i] = unary_op<T>(op, x[at(lx, i)]); }                           \
            return;                                                                                \
        }                                                                                          \
        GRID_STRIDE(i, n) { y[i] = unary_op<T>(op, x[at(lx, i)]); }                                \
    }                                                                                              \
    extern "C" __global__ void pow_scalar_##S(Layout lx, const T* x, T e, T* y, u64 n, int vec) {  \
        if (vec) {                                                                                 \
            GRID_STRIDE(p, n / PACK(T)) {                                                          \
                Pack<T> a = load_pack<T>(lx, x, p), r;                                             \
                for (int k = 0; k < PACK(T); ++k) r.v[k] = pow_scalar<T>(a.v[k], e);               \
                store_pack<T>(y, p, r);                                                            \
            }                                                                                      \
            PACK_TAIL(i, n, T) { y[i] = pow_scalar<T>(x[at(lx, i)], e); }                          \
            return;                                                                                \
        }                                                                                          \
        GRID_STRIDE(i, n) { y[i] = pow_scalar<T>(x[at(lx, i)], e); }                              \
    }                                                                                              \
    extern "C" __global__ void binary_##S(int op, Layout la, const T* a, Layout lb, const T* b,    \
                                          T* y, u64 n, int vec) {                                  \
        if (vec) {                                                                                 \
            GRID_STRIDE(p, n / PACK(T)) {                                                          \
                Pack<T> u = load_pack<T>(la, a, p), v = load_pack<T>(lb, b, p), r;                 \
                for (int k = 0; k < PACK(T); ++k) r.v[k] = binary_op<T>(op, u.v[k], v.v[k]);       \
                store_pack<T>(y, p, r);                                                            \
            }                                                                                      \
            PACK_TAIL(i, n, T) { y[i] = binary_op<T>(op, a[at(la, i)], b[at(lb, i)]); }            \
            return;                                                                                \
        }                                                                                          \
        GRID_STRIDE(i, n) { y[i] = binary_op<T>(op, a[at(la, i)], b[at(lb, i)]); }                 \
    }                                                                                              \
    extern "C" __global__ void binary_scalar_##S(int op, Layout lx, const T* x, T s, int left,     \
                                                 T* y, u64 n, int vec) {                           \
        if (vec) {                                                                                 \
            GRID_STRIDE(p, n / PACK(T)) {                                                          \
                Pack<T> a = load_pack<T>(lx, x, p), r;                                             \
                for (int k = 0; k < PACK(T); ++k)                                                  \
                    r.v[k] = left ? binary_op<T>(op, s, a.v[k]) : binary_op<T>(op, a.v[k], s);     \
                store_pack<T>(y, p, r);                                                            \
            }                                                                                      \
            PACK_TAIL(i, n, T) {                                                                   \
                T v = x[at(lx, i)];                                                                \
                y[i] = left ? binary_op<T>(op, s, v) : binary_op<T>(op, v, s);                     \
            }                                                                                      \
            return;                                                                                \
        }                                                                                          \
        GRID_STRIDE(i, n) {                                                                        \
            T v = x[at(lx, i)];                                                                    \
            y[i] = left ? binary_op<T>(op, s, v) : binary_op<T>(op, v, s);                         \
        }                                                                                          \
    }                                                                                              \
    extern "C" __global__ void grad_formula_##S(int op, T e, Layout la, const T* a, Layout lb,     \
                                                const T* b, T* y, u64 n, int vec) {                \
        if (vec) {                                                                                 \
            GRID_STRIDE(p, n / PACK(T)) {                                                          \
                Pack<T> u = load_pack<T>(la, a, p), v = load_pack<T>(lb, b, p), r;                 \
                for (int k = 0; k < PACK(T); ++k)                                                  \
                    r.v[k] = grad_formula_op<T>(op, u.v[k], v.v[k], e);                            \
                store_pack<T>(y, p, r);                                                            \
            }                                                                                      \
            PACK_TAIL(i, n, T) { y[i] = grad_formula_op<T>(op, a[at(la, i)], b[at(lb, i)], e); }   \
            return;                                                                                \
        }                                                                                          \
        GRID_STRIDE(i, n) { y[i] = grad_formula_op<T>(op, a[at(la, i)], b[at(lb, i)], e); }        \
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

#define COLS_TILE 32
#define COLS_LANES (BLOCK / COLS_TILE)

// `lx` lists the kept dims first and the reduced dims last, so output `o` sums elements
// `o * k .. (o + 1) * k` of `lx` in C order. Each run is cut into `segs` segments of `per`
// elements (the host picks both from the shape alone); block `b` sums segment `b % segs` of run
// `b / segs` into `y[b]`, and with `segs > 1` a second launch sums each run's segments: many
// blocks for a few long runs (a full sum), in an order that depends on the shape only.
//
// `sum_cols`: column sums of a [rows, cols] matrix of row stride `ld` (the bias gradient's
// case: reduced dims outside, kept dims inside and dense), coalesced: block (tile, seg) takes
// COLS_TILE columns and rows `seg * per ..`, thread (col = tid % COLS_TILE, lane = tid /
// COLS_TILE) adds rows lane, lane + COLS_LANES, ... in order, and the lanes combine in a fixed
// tree. The sum of segment `seg` of column `c` goes to `y[seg * cols + c]`.
#define REDUCE(T, S)                                                                               \
    extern "C" __global__ void sum_##S(Layout lx, const T* x, T* y, u64 m, u64 k, u64 segs,        \
                                       u64 per) {                                                  \
        __shared__ T part[BLOCK];                                                                  \
        for (u64 b = blockIdx.x; b < m * segs; b += gridDim.x) {                                   \
            u64 o = b / segs, start = (b % segs) * per;                                            \
            u64 end = start + per < k ? start + per : k;                                           \
            T acc = T(0);                                                                          \
            for (u64 r = start + threadIdx.x; r < end; r += BLOCK) acc += x[at(lx, o * k + r)];    \
            part[threadIdx.x] = acc;                                                               \
            block_sum<T>(part);                                                                    \
            if (threadIdx.x == 0) y[b] = part[0];                                                  \
            __syncthreads();                                                                       \
        }                                                                                          \
    }                                                                                              \
    extern "C" __global__ void sum_cols_##S(const T* x, u64 ld, T* y, u64 rows, u64 cols,          \
                                            u64 per) {                                             \
        __shared__ T part[BLOCK];                                                                  \
        u64 col = (u64)blockIdx.x * COLS_TILE + threadIdx.x % COLS_TILE;                           \
        u64 lane = threadIdx.x / COLS_TILE;                                                        \
        u64 start = (u64)blockIdx.y * per;                                                         \
        u64 end = start + per < rows ? start + per : rows;                                         \
        T acc = T(0);                                                                              \
        if (col < cols)                                                                            \
            for (u64 r = start + lane; r < end; r += COLS_LANES) acc += x[r * ld + col];           \
        part[threadIdx.x] = acc;                                                                   \
        for (int width = COLS_LANES / 2; width > 0; width /= 2) {                                  \
            __syncthreads();                                                                       \
            if (lane < width) part[threadIdx.x] += part[threadIdx.x + width * COLS_TILE];          \
        }                                                                                          \
        if (lane == 0 && col < cols) y[(u64)blockIdx.y * cols + col] = part[threadIdx.x];          \
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

// ----- fused optimizer steps: one launch over every parameter of a group ----------------------
//
// PyTorch's `multi_tensor_apply`: the host uploads one table of u64 words, first `nsets` sets of
// OPT_SET_WORDS words (one per parameter), then `nchunks` chunks of 2 words:
//
//   set:   [n, flags, param, grad, state0, state1, state2, k0 .. k9]
//   chunk: [set index, first element]
//
// `param`, `grad` and `state*` are device addresses of contiguous elements (0 for an unused
// state); `k*` are the step's scalars, already rounded to the element type on the host and
// stored as the bits of a double (exact). Block `b` takes chunks b, b + gridDim.x, ... (a
// grid-stride loop over chunks) and its threads stride over the chunk's OPT_CHUNK elements.
// Each element is read and written once, by one thread: no races, no order dependence.
//
// The arithmetic repeats `backend/cpu/optim/*.rs` operation for operation (so the results are
// the CPU's bits): `fma` exactly where the CPU kernel calls `mul_add`, and no contraction
// elsewhere (`kernels.rs` compiles with `fmad` off).

#define OPT_CHUNK 4096
#define OPT_SET_WORDS 17

__device__ __forceinline__ float m_fma(float a, float b, float c) { return fmaf(a, b, c); }
__device__ __forceinline__ double m_fma(double a, double b, double c) { return fma(a, b, c); }

template <typename T> __device__ __forceinline__ T opt_k(const u64* set, int j) {
    return (T)__longlong_as_double((long long)set[7 + j]);
}

template <typename T> __device__ __forceinline__ T* opt_ptr(const u64* set, int j) {
    return (T*)set[j];
}

// `m.lerp(g, w)` as PyTorch's CPU kernel computes it (`lerp` in `backend/cpu/optim/mod.rs`).
template <typename T> __device__ __forceinline__ T opt_lerp(T m, T g, T w, T omw, bool small) {
    return small ? m + w * (g - m) : g - (g - m) * omw;
}

// Runs `Op` (built once per chunk from its set's words) on every element of every chunk.
template <typename Op> __device__ void opt_apply(const u64* table, u64 nsets, u64 nchunks) {
    const u64* chunks = table + nsets * OPT_SET_WORDS;
    for (u64 c = blockIdx.x; c < nchunks; c += gridDim.x) {
        const u64* set = table + chunks[2 * c] * OPT_SET_WORDS;
        u64 start = chunks[2 * c + 1];
        u64 end = start + OPT_CHUNK < set[0] ? start + OPT_CHUNK : set[0];
        Op op(set);
        for (u64 i = start + threadIdx.x; i < end; i += blockDim.x) op.elem(i);
    }
}

// Adam and AdamW (`backend/cpu/optim/adam.rs`). State: exp_avg, exp_avg_sq, max_exp_avg_sq.
// Flags: 1 L2 weight decay, 2 decoupled decay, 4 |w| < 0.5 (lerp's form), 8 amsgrad.
// Scalars: sign, wd, decay, w, 1 - w, beta2, 1 - beta2, sqrt(bias correction 2), eps, -step.
template <typename T> struct AdamStep {
    T *p, *m, *v, *vmax;
    const T* g;
    T sign, wd, decay, w, omw, beta2, c2, bc2, eps, neg_step;
    bool l2, dec, small, ams;
    __device__ AdamStep(const u64* s) {
        u64 f = s[1];
        p = opt_ptr<T>(s, 2);
        g = opt_ptr<T>(s, 3);
        m = opt_ptr<T>(s, 4);
        v = opt_ptr<T>(s, 5);
        vmax = opt_ptr<T>(s, 6);
        sign = opt_k<T>(s, 0);
        wd = opt_k<T>(s, 1);
        decay = opt_k<T>(s, 2);
        w = opt_k<T>(s, 3);
        omw = opt_k<T>(s, 4);
        beta2 = opt_k<T>(s, 5);
        c2 = opt_k<T>(s, 6);
        bc2 = opt_k<T>(s, 7);
        eps = opt_k<T>(s, 8);
        neg_step = opt_k<T>(s, 9);
        l2 = f & 1;
        dec = f & 2;
        small = f & 4;
        ams = f & 8;
    }
    __device__ __forceinline__ void elem(u64 i) const {
        T pi = p[i];
        T gi = g[i] * sign;
        if (l2) gi = m_fma(pi, wd, gi);
        if (dec) pi = pi * decay;
        T mi = opt_lerp(m[i], gi, w, omw, small);
        m[i] = mi;
        T vi = v[i] * beta2 + c2 * gi * gi;
        v[i] = vi;
        T x = vi;
        if (ams) {
            T old = vmax[i];
            x = (old >= vi || is_nan(old)) ? old : vi;
            vmax[i] = x;
        }
        p[i] = pi + neg_step * mi / (m_sqrt(x) / bc2 + eps);
    }
};

// SGD (`backend/cpu/optim/sgd.rs`). State: momentum_buffer.
// Flags: 1 weight decay, 2 momentum, 4 the buffer's first step, 8 Nesterov.
// Scalars: sign, wd, -lr, momentum, 1 - dampening.
template <typename T> struct SgdStep {
    T *p, *buf;
    const T* g;
    T sign, wd, neg_lr, mom, damp;
    bool use_wd, use_mom, first, nesterov;
    __device__ SgdStep(const u64* s) {
        u64 f = s[1];
        p = opt_ptr<T>(s, 2);
        g = opt_ptr<T>(s, 3);
        buf = opt_ptr<T>(s, 4);
        sign = opt_k<T>(s, 0);
        wd = opt_k<T>(s, 1);
        neg_lr = opt_k<T>(s, 2);
        mom = opt_k<T>(s, 3);
        damp = opt_k<T>(s, 4);
        use_wd = f & 1;
        use_mom = f & 2;
        first = f & 4;
        nesterov = f & 8;
    }
    __device__ __forceinline__ void elem(u64 i) const {
        T pi = p[i];
        T gi = g[i] * sign;
        if (use_wd) gi = m_fma(pi, wd, gi);
        if (!use_mom) {
            p[i] = m_fma(gi, neg_lr, pi);
            return;
        }
        T b = first ? gi : m_fma(gi, damp, buf[i] * mom);
        buf[i] = b;
        T d = nesterov ? m_fma(b, mom, gi) : b;
        p[i] = m_fma(d, neg_lr, pi);
    }
};

// RMSprop (`backend/cpu/optim/rmsprop.rs`). State: square_avg, momentum_buffer, grad_avg.
// Flags: 1 weight decay, 2 momentum, 4 centered, 8 |1 - alpha| < 0.5 (lerp's form).
// Scalars: sign, wd, alpha, 1 - alpha, 1 - (1 - alpha), eps, momentum, -lr.
template <typename T> struct RmsPropStep {
    T *p, *sq, *buf, *gavg;
    const T* g;
    T sign, wd, alpha, c1, omw, eps, mom, neg_lr;
    bool use_wd, use_mom, centered, small;
    __device__ RmsPropStep(const u64* s) {
        u64 f = s[1];
        p = opt_ptr<T>(s, 2);
        g = opt_ptr<T>(s, 3);
        sq = opt_ptr<T>(s, 4);
        buf = opt_ptr<T>(s, 5);
        gavg = opt_ptr<T>(s, 6);
        sign = opt_k<T>(s, 0);
        wd = opt_k<T>(s, 1);
        alpha = opt_k<T>(s, 2);
        c1 = opt_k<T>(s, 3);
        omw = opt_k<T>(s, 4);
        eps = opt_k<T>(s, 5);
        mom = opt_k<T>(s, 6);
        neg_lr = opt_k<T>(s, 7);
        use_wd = f & 1;
        use_mom = f & 2;
        centered = f & 4;
        small = f & 8;
    }
    __device__ __forceinline__ void elem(u64 i) const {
        T pi = p[i];
        T gi = g[i] * sign;
        if (use_wd) gi = m_fma(pi, wd, gi);
        T si = sq[i] * alpha + c1 * gi * gi;
        sq[i] = si;
        T avg;
        if (centered) {
            T a = opt_lerp(gavg[i], gi, c1, omw, small);
            gavg[i] = a;
            avg = m_sqrt(si + T(-1) * a * a);
        } else {
            avg = m_sqrt(si);
        }
        avg = avg + eps;
        if (use_mom) {
            T bi = buf[i] * mom + T(1) * gi / avg;
            buf[i] = bi;
            p[i] = m_fma(bi, neg_lr, pi);
        } else {
            p[i] = pi + neg_lr * gi / avg;
        }
    }
};

// Adagrad (`backend/cpu/optim/adagrad.rs`). State: sum. Flags: 1 weight decay.
// Scalars: sign, wd, eps, -clr.
template <typename T> struct AdagradStep {
    T *p, *sum;
    const T* g;
    T sign, wd, eps, neg_clr;
    bool use_wd;
    __device__ AdagradStep(const u64* s) {
        p = opt_ptr<T>(s, 2);
        g = opt_ptr<T>(s, 3);
        sum = opt_ptr<T>(s, 4);
        sign = opt_k<T>(s, 0);
        wd = opt_k<T>(s, 1);
        eps = opt_k<T>(s, 2);
        neg_clr = opt_k<T>(s, 3);
        use_wd = s[1] & 1;
    }
    __device__ __forceinline__ void elem(u64 i) const {
        T pi = p[i];
        T gi = g[i] * sign;
        if (use_wd) gi = m_fma(pi, wd, gi);
        T si = sum[i] + T(1) * gi * gi;
        sum[i] = si;
        p[i] = pi + neg_clr * gi / (m_sqrt(si) + eps);
    }
};

#define OPTIMIZERS(T, S)                                                                           \
    extern "C" __global__ void adam_step_##S(const u64* table, u64 nsets, u64 nchunks) {           \
        opt_apply<AdamStep<T> >(table, nsets, nchunks);                                            \
    }                                                                                              \
    extern "C" __global__ void sgd_step_##S(const u64* table, u64 nsets, u64 nchunks) {            \
        opt_apply<SgdStep<T> >(table, nsets, nchunks);                                             \
    }                                                                                              \
    extern "C" __global__ void rmsprop_step_##S(const u64* table, u64 nsets, u64 nchunks) {        \
        opt_apply<RmsPropStep<T> >(table, nsets, nchunks);                                         \
    }                                                                                              \
    extern "C" __global__ void adagrad_step_##S(const u64* table, u64 nsets, u64 nchunks) {        \
        opt_apply<AdagradStep<T> >(table, nsets, nchunks);                                         \
    }

OPTIMIZERS(float, f32)
OPTIMIZERS(double, f64)
