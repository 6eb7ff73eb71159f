// Math shared by `kernels.cu` and the generated kernels (`backend/generated.rs`): each
// function written once, so a generated kernel rounds exactly as the op-by-op kernels do.
// Needs `u64` defined before it is used (`GRID_STRIDE`).

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

__device__ __forceinline__ float m_log1p(float x) { return log1pf(x); }
__device__ __forceinline__ double m_log1p(double x) { return log1p(x); }
__device__ __forceinline__ float m_expm1(float x) { return expm1f(x); }
__device__ __forceinline__ double m_expm1(double x) { return expm1(x); }
__device__ __forceinline__ float m_log2(float x) { return log2f(x); }
__device__ __forceinline__ double m_log2(double x) { return log2(x); }
__device__ __forceinline__ float m_exp2(float x) { return exp2f(x); }
__device__ __forceinline__ double m_exp2(double x) { return exp2(x); }
__device__ __forceinline__ float m_floor(float x) { return floorf(x); }
__device__ __forceinline__ double m_floor(double x) { return floor(x); }
__device__ __forceinline__ float m_ceil(float x) { return ceilf(x); }
__device__ __forceinline__ double m_ceil(double x) { return ceil(x); }
// Halves to even in the default rounding mode, as PyTorch's `round`.
__device__ __forceinline__ float m_round(float x) { return rintf(x); }
__device__ __forceinline__ double m_round(double x) { return rint(x); }
__device__ __forceinline__ float m_trunc(float x) { return truncf(x); }
__device__ __forceinline__ double m_trunc(double x) { return trunc(x); }
__device__ __forceinline__ float m_fmod(float x, float y) { return fmodf(x, y); }
__device__ __forceinline__ double m_fmod(double x, double y) { return fmod(x, y); }
__device__ __forceinline__ float m_atan2(float x, float y) { return atan2f(x, y); }
__device__ __forceinline__ double m_atan2(double x, double y) { return atan2(x, y); }

template <typename T> __device__ __forceinline__ bool is_nan(T x) { return x != x; }

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
    case 11: return x > T(0) ? T(1) : T(0);
    case 12: return m_log1p(x);
    case 13: return m_expm1(x);
    case 14: return m_log2(x);
    case 15: return m_exp2(x);
    case 16: return T(1) / m_sqrt(x);
    case 17: return x / (T(1) + m_exp(-x));
    case 18: return x * m_tanh(m_log1p(m_exp(x)));
    case 19: return m_floor(x);
    case 20: return m_ceil(x);
    case 21: return m_round(x);
    default: return m_trunc(x);
    }
}

// `fmod` with the sign of `b` (PyTorch's `remainder`).
template <typename T> __device__ __forceinline__ T remainder_of(T a, T b) {
    T m = m_fmod(a, b);
    return (m != T(0) && ((b < T(0)) != (m < T(0)))) ? m + b : m;
}

// BinaryOp, in declaration order. `minimum`/`maximum` propagate NaN.
template <typename T> __device__ T binary_op(int op, T a, T b) {
    switch (op) {
    case 0: return a + b;
    case 1: return a - b;
    case 2: return a * b;
    case 3: return a / b;
    case 4: return is_nan(a) ? a : (is_nan(b) ? b : (b < a ? b : a));
    case 5: return is_nan(a) ? a : (is_nan(b) ? b : (a < b ? b : a));
    case 6: return m_fmod(a, b);
    case 7: return remainder_of(a, b);
    case 8: return m_atan2(a, b);
    default: return a > b ? T(0) : (a == b ? T(0.5) : T(1));
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
