//! What the CUDA backend can show on any machine: the kernel source compiles under NVRTC (which
//! needs no GPU, only `libnvrtc`), the op codes match the kernels', layouts fit the kernel
//! struct, and a machine without a driver gets errors, never a panic. The GPU behaviour itself
//! is tested in `tests/ops/cuda.rs`, which skips (saying why) without a device.

use super::kernels::{self, KernelLayout, NAMES, SOURCE};
use crate::backend::{BinaryOp, GradFormula, UnaryOp};
use crate::layout::Layout;
use crate::{Device, Error, Tensor, cuda};

/// Compiles the kernels with the real NVRTC when the library can be loaded (set
/// `LD_LIBRARY_PATH` to a directory holding `libnvrtc.so.12`, e.g. from the
/// `nvidia-cuda-nvrtc-cu12` wheel, as `.ci/run` does), and checks every kernel the backend
/// loads by name is in the PTX.
#[test]
fn the_kernel_source_compiles_under_nvrtc_and_defines_every_kernel() {
    // SAFETY: only `dlopen`s candidate file names of the NVRTC library.
    if !unsafe { cudarc::nvrtc::sys::is_culib_present() } {
        println!(
            "skipped: libnvrtc.so not found, so the kernel source was not compiled \
             (put libnvrtc.so.12 on LD_LIBRARY_PATH to run this)"
        );
        return;
    }
    let ptx = match kernels::compile() {
        Ok(ptx) => ptx.to_src(),
        Err(log) => panic!("{log}"),
    };
    for name in NAMES {
        assert!(
            ptx.contains(&format!(".entry {name}(")),
            "kernel {name} is not in the PTX"
        );
    }
    // Double-precision kernels really are double precision.
    assert!(ptx.contains(".f64"));
}

/// Every instruction sample (`backend/generated/samples.rs`: each instruction and op code)
/// compiles under NVRTC, in both element types, with and without a repeated first input, and
/// defines `generated` (the fusion tests compile the kernels their plans build the same way).
/// Skips like the test above.
#[test]
fn generated_kernels_compile_under_nvrtc() {
    let samples = crate::backend::generated::samples::instruction_samples();
    if !crate::backend::generated::samples::compile_under_nvrtc(&samples) {
        println!("skipped: libnvrtc.so not found, so no generated kernel was compiled");
        return;
    }
    println!("compiled: {} generated kernels, 4 ways each", samples.len());
}

#[test]
fn every_kernel_name_is_defined_in_the_source() {
    for name in NAMES {
        let (base, suffix) = name.rsplit_once('_').unwrap();
        let defined = SOURCE.contains(&format!("void {name}("))
            || (SOURCE.contains(&format!("void {base}_##S(")) && ["f32", "f64"].contains(&suffix));
        assert!(defined, "{name} is not defined in kernels.cu");
    }
}

#[test]
fn op_codes_follow_the_kernel_switches() {
    // The `switch` in `unary_op` has one case per code, in the enum's order; spot-check the
    // codes whose formulas are easy to confuse.
    assert_eq!(kernels::unary_code(UnaryOp::Neg), 0);
    assert_eq!(kernels::unary_code(UnaryOp::Sigmoid), 6);
    assert_eq!(kernels::unary_code(UnaryOp::PositiveMask), 11);
    assert!(SOURCE.contains("case 6: return T(1) / (T(1) + m_exp(-x));"));
    assert!(SOURCE.contains("case 10: return sign_of(x);"));
    assert!(SOURCE.contains("case 11: return x > T(0) ? T(1) : T(0);"));
    assert_eq!(kernels::unary_code(UnaryOp::Round), 21);
    assert!(SOURCE.contains("case 21: return m_round(x);\n    default: return m_trunc(x);"));
    assert_eq!(kernels::binary_code(BinaryOp::Div), 3);
    assert!(SOURCE.contains("case 2: return a * b;\n    case 3: return a / b;"));
    assert_eq!(kernels::binary_code(BinaryOp::Remainder), 7);
    assert!(SOURCE.contains("case 7: return remainder_of(a, b);"));
    assert_eq!(kernels::grad_formula_code(GradFormula::Tanh).0, 0);
    assert!(SOURCE.contains("case 0: return g * (T(1) - s * s);"));
    assert_eq!(
        kernels::grad_formula_code(GradFormula::Pow { exponent: 3.0 }),
        (7, 3.0)
    );
}

#[test]
fn kernel_layouts_carry_shape_strides_and_offset_up_to_eight_dims() {
    let l = Layout::contiguous(&[2, 3, 4])
        .transpose(0, 2)
        .narrow(0, 1, 2);
    let k = KernelLayout::new(&l).unwrap();
    let text = format!("{k:?}");
    assert!(
        text.contains("ndim: 3") && text.contains("offset: 1,"),
        "{text}"
    );
    assert!(text.contains("shape: [2, 3, 2, 1, 1, 1, 1, 1]"), "{text}");
    assert!(
        text.contains("strides: [1, 4, 12, 0, 0, 0, 0, 0]"),
        "{text}"
    );
    assert!(text.contains("index32: 1"), "{text}");
    // Nine dims that cannot merge (every stride out of C order) do not fit the kernel struct.
    let strides: Vec<usize> = (0..9).map(|d| 1 << d).collect();
    assert!(KernelLayout::from_parts(&[2; 9], &strides, 0).is_none());
    assert!(KernelLayout::from_parts(&[2; 8], &strides[..8], 0).is_some());
    // The Rust struct is the C struct: 2 + 8 + 8 + 1 u64s.
    assert_eq!(std::mem::size_of::<KernelLayout>(), 19 * 8);
    assert!(SOURCE.contains("    u64 strides[MAX_DIMS];\n    // 1 when every element index fits"));
}

/// Merging dims keeps the C-order offset of every element: checked against the unmerged
/// formula for dense, transposed, broadcast, narrowed and size-1-padded layouts.
#[test]
fn merged_kernel_layouts_address_every_element_as_the_original() {
    let base = Layout::contiguous(&[2, 3, 4, 5]);
    let layouts = [
        base.clone(),
        base.transpose(1, 3),
        base.narrow(2, 1, 2),
        base.narrow(3, 1, 3),
        Layout::contiguous(&[3, 1, 4])
            .expand(&[2, 3, 6, 4])
            .unwrap(),
        Layout::contiguous(&[1, 1, 7, 1]),
        Layout::contiguous(&[6]).expand(&[4, 6]).unwrap(),
        Layout::contiguous(&[]),
    ];
    for l in layouts {
        let k = KernelLayout::new(&l).unwrap();
        let text = format!("{k:?}");
        let field = |name: &str| -> Vec<u64> {
            let start = text.find(&format!("{name}: [")).unwrap() + name.len() + 3;
            let end = start + text[start..].find(']').unwrap();
            text[start..end]
                .split(", ")
                .map(|v| v.parse().unwrap())
                .collect()
        };
        let scalar = |name: &str| -> u64 {
            let start = text.find(&format!("{name}: ")).unwrap() + name.len() + 2;
            let end = start + text[start..].find([',', ' ', '}']).unwrap();
            text[start..end].parse().unwrap()
        };
        let (ndim, offset) = (scalar("ndim") as usize, scalar("offset"));
        let (shape, strides) = (field("shape"), field("strides"));
        // The kernel's `at`, on the merged layout.
        let at = |mut i: u64| {
            if ndim <= 1 {
                return offset + i * strides[0];
            }
            let mut off = offset;
            for d in (0..ndim).rev() {
                off += (i % shape[d]) * strides[d];
                i /= shape[d];
            }
            off
        };
        // The unmerged C-order offsets.
        let n: usize = l.shape.iter().product();
        for i in 0..n {
            let mut rest = i;
            let mut expected = l.offset;
            for d in (0..l.shape.len()).rev() {
                expected += (rest % l.shape[d]) * l.strides[d];
                rest /= l.shape[d];
            }
            assert_eq!(at(i as u64), expected as u64, "{l:?} element {i}: {text}");
        }
    }
    let dense = KernelLayout::contiguous(&[4, 5, 6]).unwrap();
    assert!(format!("{dense:?}").contains("ndim: 1"), "{dense:?}");
}

#[test]
fn without_a_device_cuda_requests_are_errors_that_say_why() -> crate::Result<()> {
    if cuda::is_available() {
        println!("skipped: this machine has a CUDA device; tests/ops/cuda.rs covers it");
        return Ok(());
    }
    assert_eq!(cuda::device_count(), 0);
    let x = Tensor::from_vec(vec![1.0f32, 2.0], &[2])?.requires_grad_(true)?;
    let err = x.to(Device::Cuda(0)).unwrap_err();
    let Error::DeviceUnavailable { device, reason } = &err else {
        panic!("expected DeviceUnavailable, got {err:?}");
    };
    assert_eq!(*device, Device::Cuda(0));
    assert!(
        reason.starts_with("no CUDA driver found") || reason.starts_with("no such device"),
        "{reason}"
    );
    assert!(
        err.to_string()
            .starts_with("device cuda:0 is not available: ")
    );
    assert_eq!(
        cuda::unavailable_reason(3).as_deref(),
        Some(reason.as_str())
    );
    assert!(matches!(
        cuda::synchronize(0),
        Err(Error::DeviceUnavailable { .. })
    ));
    assert!(matches!(
        cuda::memory_allocated(0),
        Err(Error::DeviceUnavailable { .. })
    ));
    assert!(matches!(
        cuda::memory_reserved(0),
        Err(Error::DeviceUnavailable { .. })
    ));
    cuda::empty_cache(); // nothing to give back, and no panic
    // The engine is untouched by the failed request.
    x.mul_scalar(3.0)?.sum()?.backward()?;
    assert_eq!(x.grad().unwrap().to_vec::<f32>()?, [3.0, 3.0]);
    Ok(())
}

/// Element-wise kernels move 16-byte packs only where every operand is a dense run or a row
/// broadcast of whole packs, and every address is 16-byte aligned.
#[test]
fn element_wise_kernels_take_packs_only_where_every_operand_allows() {
    use crate::DType::{F32, F64};
    let dense = KernelLayout::contiguous(&[64, 10]).unwrap();
    let plan = kernels::vector_plan;
    assert_eq!(plan(F32, 640, &[(&dense, 256)], 512), (1, 160));
    assert_eq!(plan(F64, 640, &[(&dense, 256)], 512), (1, 320));
    // An odd count still goes by packs, the tail one element per thread.
    let odd = KernelLayout::contiguous(&[7]).unwrap();
    assert_eq!(plan(F32, 7, &[(&odd, 0)], 0), (1, 2));
    // Too few elements for one pack, a misaligned operand or output: element by element.
    let three = KernelLayout::contiguous(&[3]).unwrap();
    assert_eq!(plan(F32, 3, &[(&three, 0)], 0), (0, 3));
    assert_eq!(plan(F32, 640, &[(&dense, 4)], 512), (0, 640));
    assert_eq!(plan(F32, 640, &[(&dense, 256)], 520), (0, 640));
    let shifted = KernelLayout::new(&Layout::contiguous(&[650]).narrow(0, 1, 640)).unwrap();
    assert_eq!(plan(F32, 640, &[(&shifted, 0)], 0), (0, 640));
    let by_four = KernelLayout::new(&Layout::contiguous(&[650]).narrow(0, 4, 640)).unwrap();
    assert_eq!(plan(F32, 640, &[(&by_four, 0)], 0), (1, 160));
    // A bias broadcast down the rows: packs when its rows are whole packs.
    let bias =
        |c: usize| KernelLayout::new(&Layout::contiguous(&[c]).expand(&[64, c]).unwrap()).unwrap();
    assert_eq!(
        plan(F32, 64 * 8, &[(&dense, 0), (&bias(8), 0)], 0),
        (1, 128)
    );
    assert_eq!(
        plan(F32, 64 * 6, &[(&dense, 0), (&bias(6), 0)], 0),
        (0, 384)
    );
    assert_eq!(
        plan(F64, 64 * 6, &[(&dense, 0), (&bias(6), 0)], 0),
        (1, 192)
    );
    // Transposed or broadcast the other way: element by element.
    let transposed = KernelLayout::new(&Layout::contiguous(&[8, 8]).transpose(0, 1)).unwrap();
    assert_eq!(plan(F32, 64, &[(&transposed, 0)], 0), (0, 64));
    let column = KernelLayout::new(&Layout::contiguous(&[8, 1]).expand(&[8, 8]).unwrap()).unwrap();
    assert_eq!(plan(F32, 64, &[(&column, 0)], 0), (0, 64));
}

/// The element-wise kernels of `kernels.cu` compiled as host C++ (blocks and threads looped):
/// the 16-byte-pack path gives, element for element and bit for bit, what the one-element path
/// gives, and writes every output, for dense runs (lengths around the pack and block sizes, tails
/// included) and bias rows, in f32 and f64. Runs wherever a C++ compiler is (`c++`), no GPU
/// needed; prints `skipped` otherwise. (On a GPU, `tests/ops/cuda.rs` checks both paths against
/// the CPU backend.)
#[test]
fn packed_and_element_wise_kernel_paths_agree_when_run_on_the_host() {
    const SHIM: &str = r#"
#include <cstdio>
#include <cstring>
#include <math.h>
#include <vector>
#define __device__
#define __global__
#define __forceinline__ inline
struct Dim { unsigned x; };
static Dim blockIdx, threadIdx, blockDim, gridDim;
static inline float __int_as_float(int v) { float f; std::memcpy(&f, &v, 4); return f; }
static inline double __longlong_as_double(long long v) { double d; std::memcpy(&d, &v, 8); return d; }
"#;
    const MAIN: &str = r#"
static Layout dense(u64 n, u64 offset) {
    Layout l = {};
    l.ndim = 1; l.offset = offset; l.shape[0] = n; l.strides[0] = 1; l.index32 = 1;
    return l;
}
static Layout rows(u64 r, u64 c) {
    Layout l = {};
    l.ndim = 2; l.shape[0] = r; l.shape[1] = c; l.strides[0] = 0; l.strides[1] = 1; l.index32 = 1;
    return l;
}
template <typename F> static void grid(u64 work, F k) {
    blockDim.x = 256;
    gridDim.x = (unsigned)((work + 255) / 256);
    if (gridDim.x == 0) return;
    for (blockIdx.x = 0; blockIdx.x < gridDim.x; ++blockIdx.x)
        for (threadIdx.x = 0; threadIdx.x < blockDim.x; ++threadIdx.x) k();
}
static int checks = 0, failures = 0;
template <typename T> static void compare(const char* what, u64 n, const std::vector<T>& a,
                                          const std::vector<T>& b) {
    ++checks;
    for (u64 i = 0; i < n; ++i) {
        if (std::memcmp(&a[i], &b[i], sizeof(T)) != 0 || a[i] != a[i]) {
            if (failures++ < 5) std::printf("mismatch: %s n=%llu at %llu: %g vs %g\n", what, n, i, (double)a[i], (double)b[i]);
            return;
        }
    }
}
template <typename T, typename Run> static void both(const char* what, u64 n, Run run) {
    const u64 P = 16 / sizeof(T);
    std::vector<T> one(n + 1, T(-12345)), packed(n + 1, T(-12345));
    run(one.data(), 0, n);
    run(packed.data(), 1, (n + P - 1) / P);
    compare<T>(what, n, one, packed);
    for (u64 i = 0; i < n; ++i) if (one[i] == T(-12345)) { ++failures; std::printf("unwritten: %s n=%llu at %llu\n", what, n, i); break; }
}
template <typename T> static void suite(void (*unary)(int, Layout, const T*, T*, u64, int),
                                        void (*binary)(int, Layout, const T*, Layout, const T*, T*, u64, int),
                                        void (*scalar)(int, Layout, const T*, T, int, T*, u64, int),
                                        void (*formula)(int, T, Layout, const T*, Layout, const T*, T*, u64, int),
                                        void (*power)(Layout, const T*, T, T*, u64, int)) {
    const u64 P = 16 / sizeof(T);
    const u64 lengths[] = {1, 2, 3, 4, 5, 7, 8, 9, 255, 256, 257, 1023, 1024, 1025, 4099};
    for (u64 n : lengths) {
        std::vector<T> a(n + P), b(n + P);
        for (u64 i = 0; i < n + P; ++i) { a[i] = T(((i * 7919) % 1000) / 250.0 - 2.0); b[i] = T(((i * 104729) % 997) / 300.0 - 1.5); }
        for (u64 off : {(u64)0, P}) {
            Layout la = dense(n, off), lb = dense(n, off);
            for (int op : {0, 5, 6, 7, 9}) both<T>("unary", n, [&](T* y, int vec, u64 work) { grid(work, [&] { unary(op, la, a.data(), y, n, vec); }); });
            for (int op : {0, 1, 2, 3}) both<T>("binary", n, [&](T* y, int vec, u64 work) { grid(work, [&] { binary(op, la, a.data(), lb, b.data(), y, n, vec); }); });
            for (int left : {0, 1}) both<T>("binary_scalar", n, [&](T* y, int vec, u64 work) { grid(work, [&] { scalar(3, la, a.data(), T(0.3), left, y, n, vec); }); });
            for (int op : {0, 2, 7}) both<T>("grad_formula", n, [&](T* y, int vec, u64 work) { grid(work, [&] { formula(op, T(3), la, a.data(), lb, b.data(), y, n, vec); }); });
            both<T>("pow_scalar", n, [&](T* y, int vec, u64 work) { grid(work, [&] { power(la, a.data(), T(3), y, n, vec); }); });
        }
    }
    // Bias rows: a [r, c] matrix plus a row of c broadcast down it, c a whole number of packs.
    for (u64 r : {(u64)1, (u64)3, (u64)64}) for (u64 c : {P, 2 * P, 7 * P, 64 * P}) {
        u64 n = r * c;
        std::vector<T> m(n), bias(c);
        for (u64 i = 0; i < n; ++i) m[i] = T(((i * 31) % 101) / 7.0 - 5.0);
        for (u64 j = 0; j < c; ++j) bias[j] = T(j) / T(3) - T(1);
        Layout lm = dense(n, 0), lr = rows(r, c);
        both<T>("bias add", n, [&](T* y, int vec, u64 work) { grid(work, [&] { binary(0, lm, m.data(), lr, bias.data(), y, n, vec); }); });
        both<T>("bias first", n, [&](T* y, int vec, u64 work) { grid(work, [&] { binary(1, lr, bias.data(), lm, m.data(), y, n, vec); }); });
    }
}
int main() {
    suite<float>(unary_f32, binary_f32, binary_scalar_f32, grad_formula_f32, pow_scalar_f32);
    suite<double>(unary_f64, binary_f64, binary_scalar_f64, grad_formula_f64, pow_scalar_f64);
    if (failures) { std::printf("%d of %d checks failed\n", failures, checks); return 1; }
    std::printf("ok: %d checks\n", checks);
    return 0;
}
"#;
    let end = SOURCE
        .find("// ----- reductions")
        .expect("kernels.cu has a reductions section");
    let dir = std::env::temp_dir().join(format!("autograd-packs-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let cpp = dir.join("packs.cpp");
    std::fs::write(&cpp, format!("{SHIM}{}{MAIN}", &SOURCE[..end])).unwrap();
    let exe = dir.join("packs");
    let Ok(built) = std::process::Command::new("c++")
        .args(["-std=c++17", "-O1", "-ffp-contract=off", "-o"])
        .arg(&exe)
        .arg(&cpp)
        .output()
    else {
        println!("skipped: no C++ compiler (`c++`) to run the kernels on the host");
        return;
    };
    assert!(
        built.status.success(),
        "the element-wise kernels do not compile as host C++: {}",
        String::from_utf8_lossy(&built.stderr)
    );
    let run = std::process::Command::new(&exe).output().unwrap();
    let stdout = String::from_utf8_lossy(&run.stdout).into_owned();
    std::fs::remove_dir_all(&dir).ok();
    assert!(run.status.success(), "{stdout}");
    println!("ran: {stdout}");
    assert!(stdout.starts_with("ok: "), "{stdout}");
}

/// Every kernel the backend launches by base name (`kernel!("...")` in this folder's files) is
/// loaded into each device's module under both of its names: a misspelt base would otherwise
/// show only on a GPU, as "no kernel named ...".
#[test]
fn every_kernel_launched_by_name_is_one_the_module_loads() {
    let files = [
        include_str!("dispatch.rs"),
        include_str!("index.rs"),
        include_str!("launch.rs"),
        include_str!("optim.rs"),
        include_str!("reduce.rs"),
        include_str!("transfer.rs"),
    ];
    let mut seen = 0;
    for file in files {
        for rest in file.split("kernel!(\"").skip(1) {
            let base = &rest[..rest.find('"').expect("a closing quote")];
            for suffix in ["_f32", "_f64"] {
                let name = format!("{base}{suffix}");
                assert!(
                    NAMES.contains(&name.as_str()),
                    "kernel!(\"{base}\"): no {name}"
                );
            }
            seen += 1;
        }
    }
    assert!(seen >= 20, "found only {seen} uses of kernel!");
    assert_eq!(kernels::kernel!("unary").of(crate::DType::F64), "unary_f64");
}
