// #[differentiable()]
fn scaled_square(x: &Tensor, scale: f64) -> Tensor {
    <__autograd_scaled_square_marker as __autograd_scaled_square_backward>::call(
        x,
        scale,
    )
}
#[doc(hidden)]
#[allow(non_snake_case)]
pub(crate) fn __autograd_scaled_square_forward(x: &Tensor, scale: f64) -> Tensor {
    x * x * scale
}
#[doc(hidden)]
#[allow(non_camel_case_types, dead_code)]
pub(crate) struct __autograd_scaled_square_marker;
#[doc(hidden)]
#[allow(non_camel_case_types)]
#[diagnostic::on_unimplemented(
    message = "`#[differentiable]` function `scaled_square` has no `#[backward]`",
    label = "add a function annotated `#[backward(scaled_square)]`",
    note = "the backward names the incoming gradients first (`grad`), then any forward parameters or outputs (`result`) it needs, and returns one gradient per `&Tensor` input"
)]
pub(crate) trait __autograd_scaled_square_backward {
    fn call(x: &Tensor, scale: f64) -> Tensor;
}
#[doc(hidden)]
#[allow(non_camel_case_types, dead_code, private_interfaces)]
pub(crate) type __autograd_scaled_square_param0<'__autograd> = &'__autograd Tensor;
#[doc(hidden)]
#[allow(non_camel_case_types, dead_code, private_interfaces)]
pub(crate) type __autograd_scaled_square_param1 = f64;
#[doc(hidden)]
#[allow(non_camel_case_types, dead_code, private_interfaces)]
pub(crate) type __autograd_scaled_square_output = Tensor;
#[doc(hidden)]
#[allow(unused_macros)]
macro_rules! __autograd_scaled_square_signature {
    ($($backward:tt)*) => {
        ::autograd::__check_backward! { {} { fn scaled_square(x : & Tensor, scale : f64)
        -> Tensor } $($backward)* }
    };
}
#[doc(hidden)]
#[allow(unused_imports)]
pub(crate) use __autograd_scaled_square_signature;

// #[backward(scaled_square)]
fn scaled_square_backward(grad: &Tensor, x: &Tensor, scale: f64) -> Tensor {
    grad * x * (2.0 * scale)
}
__autograd_scaled_square_signature! {
    { scaled_square } { scaled_square_backward } { fn scaled_square_backward(grad : &
    Tensor, x : & Tensor, scale : f64) -> Tensor }
}

// __check_backward! (through the signature macro)
const _: () = {
    ::autograd::__private::assert_attribute::<__autograd_scaled_square_param1>();
    struct __AutogradNode {
        __saved_x: ::autograd::SavedTensor,
        __saved_scale: __autograd_scaled_square_param1,
    }
    impl ::autograd::__private::Backward for __AutogradNode {
        const NAME: &'static str = "ScaledSquareBackward0";
        const SKIP_IF_NO_GRAD: bool = false;
        const MATERIALIZE_GRADS: bool = true;
        fn backward(
            &self,
            _meta: &::autograd::NodeMeta,
            grads: ::autograd::__private::GradVec,
        ) -> ::autograd::Result<::autograd::__private::GradVec> {
            let __grad_0: ::core::option::Option<&::autograd::Tensor> = grads
                .get(0usize)
                .and_then(::core::option::Option::as_ref);
            let __saved_x_unpacked = self.__saved_x.get()?;
            let __saved_scale_value = ::core::clone::Clone::clone(&self.__saved_scale);
            let __saved_scale_arg: f64 = __saved_scale_value;
            let __result = scaled_square_backward(
                __grad_0
                    .expect(
                        "invariant: `FunctionNode` materialises undefined gradients",
                    ),
                &__saved_x_unpacked,
                __saved_scale_arg,
            );
            let __r0 = __result;
            #[allow(unused_mut)]
            let mut __out: ::autograd::__private::GradVec = ::autograd::__private::smallvec::smallvec![
                ::core::option::Option::Some(__r0)
            ];
            ::core::result::Result::Ok(__out)
        }
        fn release(&self) {
            self.__saved_x.release();
        }
        fn visit_saved(
            &self,
            __visit: &mut dyn ::core::ops::FnMut(&str, &::autograd::SavedTensor),
        ) {
            let _ = &__visit;
            __visit("x", &self.__saved_x);
        }
    }
    impl __autograd_scaled_square_backward for __autograd_scaled_square_marker {
        fn call(
            x: __autograd_scaled_square_param0<'_>,
            scale: __autograd_scaled_square_param1,
        ) -> __autograd_scaled_square_output {
            if !::autograd::is_grad_enabled() {
                return __autograd_scaled_square_forward(x, scale);
            }
            let ::core::option::Option::Some(__edges) = ::autograd::__private::next_edges(
                &[x],
            ) else {
                let _no_grad = ::autograd::no_grad();
                return __autograd_scaled_square_forward(x, scale);
            };
            let __saved_scale_attr = ::core::clone::Clone::clone(&scale);
            let __output = {
                let _no_grad = ::autograd::no_grad();
                __autograd_scaled_square_forward(x, scale)
            };
            let __out0 = __output;
            let __out0 = if !(__out0.requires_grad() || false || x.is_same(&__out0)) {
                __out0
            } else {
                __out0.detach()
            };
            let _ = ::autograd::__private::record_node(
                __edges,
                &[&__out0],
                |__weak| __AutogradNode {
                    __saved_x: ::autograd::SavedTensor::input(x),
                    __saved_scale: __saved_scale_attr,
                },
            );
            __out0
        }
    }
};
