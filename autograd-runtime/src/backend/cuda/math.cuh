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
    default: return x > T(0) ? T(1) : T(0);
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
