// #[differentiable(name = "MaxBackward0" , save (argmax))]
fn max_along(x: &Tensor, dims: &[usize]) -> Result<Tensor> {
    <__autograd_max_along_marker as __autograd_max_along_backward>::call(x, dims)
}
#[doc(hidden)]
#[allow(non_snake_case)]
pub(crate) fn __autograd_max_along_forward(
    x: &Tensor,
    dims: &[usize],
) -> Result<(Tensor, Vec<usize>)> {
    kernel(x, dims)
}
#[doc(hidden)]
#[allow(non_camel_case_types, dead_code)]
pub(crate) struct __autograd_max_along_marker;
#[doc(hidden)]
#[allow(non_camel_case_types)]
#[diagnostic::on_unimplemented(
    message = "`#[differentiable]` function `max_along` has no `#[backward]`",
    label = "add a function annotated `#[backward(max_along)]`",
    note = "the backward names the incoming gradients first (`grad`), then any forward parameters or outputs (`result`) it needs, and returns one gradient per `&Tensor` input"
)]
pub(crate) trait __autograd_max_along_backward {
    fn call(x: &Tensor, dims: &[usize]) -> Result<Tensor>;
}
#[doc(hidden)]
#[allow(non_camel_case_types, dead_code, private_interfaces)]
pub(crate) type __autograd_max_along_param0<'__autograd> = &'__autograd Tensor;
#[doc(hidden)]
#[allow(non_camel_case_types, dead_code, private_interfaces)]
pub(crate) type __autograd_max_along_param1<'__autograd> = &'__autograd [usize];
#[doc(hidden)]
#[allow(non_camel_case_types, dead_code, private_interfaces)]
pub(crate) type __autograd_max_along_param1_target = [usize];
#[doc(hidden)]
#[allow(non_camel_case_types, dead_code, private_interfaces)]
pub(crate) type __autograd_max_along_output = Result<Tensor>;
#[doc(hidden)]
#[allow(non_camel_case_types, dead_code, private_interfaces)]
pub(crate) type __autograd_max_along_residual0 = Vec<usize>;
#[doc(hidden)]
#[allow(unused_macros)]
macro_rules! __autograd_max_along_signature {
    ($($backward:tt)*) => {
        ::autograd::__check_backward! { { name = "MaxBackward0", save(argmax) } { fn
        max_along(x : & Tensor, dims : & [usize]) -> Result < (Tensor, Vec < usize >) > }
        $($backward)* }
    };
}
#[doc(hidden)]
#[allow(unused_imports)]
pub(crate) use __autograd_max_along_signature;

// #[backward(max_along)]
fn max_along_backward(
    grad: &Tensor,
    x: &InputMetadata,
    dims: &[usize],
    argmax: &[usize],
) -> Result<Tensor> {
    scatter(grad, x, dims, argmax)
}
__autograd_max_along_signature! {
    { max_along } { max_along_backward } { fn max_along_backward(grad : & Tensor, x : &
    InputMetadata, dims : & [usize], argmax : & [usize],) -> Result < Tensor > }
}

// __check_backward! (through the signature macro)
const _: () = {
    ::autograd::__private::assert_attribute::<
        <__autograd_max_along_param1_target as ::std::borrow::ToOwned>::Owned,
    >();
    ::autograd::__private::assert_attribute::<__autograd_max_along_residual0>();
    struct __AutogradNode {
        __saved_x: ::autograd::__private::InputMetadata,
        __saved_dims: <__autograd_max_along_param1_target as ::std::borrow::ToOwned>::Owned,
        __saved_argmax: __autograd_max_along_residual0,
    }
    impl ::autograd::__private::Backward for __AutogradNode {
        const NAME: &'static str = "MaxBackward0";
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
            let __saved_dims_value = &self.__saved_dims;
            let __saved_dims_arg: &[usize] = ::core::borrow::Borrow::borrow(
                __saved_dims_value,
            );
            let __saved_argmax_value = &self.__saved_argmax;
            let __saved_argmax_arg: &[usize] = __saved_argmax_value;
            let __result = max_along_backward(
                __grad_0
                    .expect(
                        "invariant: `FunctionNode` materialises undefined gradients",
                    ),
                &self.__saved_x,
                __saved_dims_arg,
                __saved_argmax_arg,
            );
            let __result = match __result {
                ::core::result::Result::Ok(__v) => __v,
                ::core::result::Result::Err(__e) => {
                    return ::core::result::Result::Err(
                        ::core::convert::Into::<::autograd::Error>::into(__e),
                    );
                }
            };
            let __r0 = __result;
            #[allow(unused_mut)]
            let mut __out: ::autograd::__private::GradVec = ::autograd::__private::smallvec::smallvec![
                ::core::option::Option::Some(__r0)
            ];
            ::core::result::Result::Ok(__out)
        }
        fn release(&self) {}
        fn visit_saved(
            &self,
            __visit: &mut dyn ::core::ops::FnMut(&str, &::autograd::SavedTensor),
        ) {
            let _ = &__visit;
        }
    }
    impl __autograd_max_along_backward for __autograd_max_along_marker {
        fn call(
            x: __autograd_max_along_param0<'_>,
            dims: __autograd_max_along_param1<'_>,
        ) -> __autograd_max_along_output {
            if !::autograd::is_grad_enabled() {
                return ::core::result::Result::map(
                    __autograd_max_along_forward(x, dims),
                    |(__out0, _)| __out0,
                );
            }
            let ::core::option::Option::Some(__edges) = ::autograd::__private::next_edges(
                &[x],
            ) else {
                let _no_grad = ::autograd::no_grad();
                return ::core::result::Result::map(
                    __autograd_max_along_forward(x, dims),
                    |(__out0, _)| __out0,
                );
            };
            let __saved_dims_attr = ::std::borrow::ToOwned::to_owned(dims);
            let __output = {
                let _no_grad = ::autograd::no_grad();
                __autograd_max_along_forward(x, dims)
            };
            let __output = match __output {
                ::core::result::Result::Ok(__v) => __v,
                ::core::result::Result::Err(__e) => {
                    return ::core::result::Result::Err(__e);
                }
            };
            let (__out0, __res0) = __output;
            let __out0 = if !(__out0.requires_grad() || false || x.is_same(&__out0)) {
                __out0
            } else {
                __out0.detach()
            };
            let _ = ::autograd::__private::record_node(
                __edges,
                &[&__out0],
                |__weak| __AutogradNode {
                    __saved_x: ::autograd::__private::InputMetadata::of(x),
                    __saved_dims: __saved_dims_attr,
                    __saved_argmax: __res0,
                },
            );
            ::core::result::Result::Ok(__out0)
        }
    }
};
