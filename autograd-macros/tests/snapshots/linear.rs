// #[differentiable()]
fn linear(x: &Tensor, w: &Tensor, bias: Option<&Tensor>) -> Result<Tensor> {
    <__autograd_linear_marker as __autograd_linear_backward>::call(x, w, bias)
}
#[doc(hidden)]
#[allow(non_snake_case)]
pub(crate) fn __autograd_linear_forward(
    x: &Tensor,
    w: &Tensor,
    bias: Option<&Tensor>,
) -> Result<Tensor> {
    let y = x.matmul(&w.transpose(0, 1)?)?;
    match bias {
        Some(b) => y.add(b),
        None => Ok(y),
    }
}
#[doc(hidden)]
#[allow(non_camel_case_types, dead_code)]
pub(crate) struct __autograd_linear_marker;
#[doc(hidden)]
#[allow(non_camel_case_types)]
#[diagnostic::on_unimplemented(
    message = "`#[differentiable]` function `linear` has no `#[backward]`",
    label = "add a function annotated `#[backward(linear)]`",
    note = "the backward names the incoming gradients first (`grad`), then any forward parameters or outputs (`result`) it needs, and returns one gradient per `&Tensor` input"
)]
pub(crate) trait __autograd_linear_backward {
    fn call(x: &Tensor, w: &Tensor, bias: Option<&Tensor>) -> Result<Tensor>;
}
#[doc(hidden)]
#[allow(non_camel_case_types, dead_code, private_interfaces)]
pub(crate) type __autograd_linear_param0<'__autograd> = &'__autograd Tensor;
#[doc(hidden)]
#[allow(non_camel_case_types, dead_code, private_interfaces)]
pub(crate) type __autograd_linear_param1<'__autograd> = &'__autograd Tensor;
#[doc(hidden)]
#[allow(non_camel_case_types, dead_code, private_interfaces)]
pub(crate) type __autograd_linear_param2<'__autograd> = Option<&'__autograd Tensor>;
#[doc(hidden)]
#[allow(non_camel_case_types, dead_code, private_interfaces)]
pub(crate) type __autograd_linear_output = Result<Tensor>;
#[doc(hidden)]
#[allow(unused_macros)]
macro_rules! __autograd_linear_signature {
    ($($backward:tt)*) => {
        ::autograd::__check_backward! { {} { fn linear(x : & Tensor, w : & Tensor, bias :
        Option < & Tensor >) -> Result < Tensor > } $($backward)* }
    };
}
#[doc(hidden)]
#[allow(unused_imports)]
pub(crate) use __autograd_linear_signature;

// #[backward(linear)]
fn linear_backward(
    grad: &Tensor,
    needs_input_grad: [bool; 3],
    x: Option<&Tensor>,
    w: Option<&Tensor>,
    bias: Option<&Tensor>,
) -> Result<(Option<Tensor>, Option<Tensor>, Option<Tensor>)> {
    todo_backward(grad, needs_input_grad, x, w, bias)
}
__autograd_linear_signature! {
    { linear } { linear_backward } { fn linear_backward(grad : & Tensor, needs_input_grad
    : [bool; 3], #[needed_for(w)] x : Option < & Tensor >, #[needed_for(x)] w : Option <
    & Tensor >, bias : Option < & Tensor >,) -> Result < (Option < Tensor >, Option <
    Tensor >, Option < Tensor >) > }
}

// __check_backward! (through the signature macro)
const _: () = {
    struct __AutogradNode {
        __saved_x: ::core::option::Option<::autograd::SavedTensor>,
        __saved_w: ::core::option::Option<::autograd::SavedTensor>,
        __saved_bias: ::core::option::Option<::autograd::SavedTensor>,
    }
    impl ::autograd::__private::Backward for __AutogradNode {
        const NAME: &'static str = "LinearBackward0";
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
            let __saved_x_unpacked: ::core::option::Option<::autograd::Tensor> = match &self
                .__saved_x
            {
                ::core::option::Option::Some(__s) => {
                    ::core::option::Option::Some(__s.get()?)
                }
                ::core::option::Option::None => ::core::option::Option::None,
            };
            let __saved_w_unpacked: ::core::option::Option<::autograd::Tensor> = match &self
                .__saved_w
            {
                ::core::option::Option::Some(__s) => {
                    ::core::option::Option::Some(__s.get()?)
                }
                ::core::option::Option::None => ::core::option::Option::None,
            };
            let __saved_bias_unpacked: ::core::option::Option<::autograd::Tensor> = match &self
                .__saved_bias
            {
                ::core::option::Option::Some(__s) => {
                    ::core::option::Option::Some(__s.get()?)
                }
                ::core::option::Option::None => ::core::option::Option::None,
            };
            let __result = linear_backward(
                __grad_0
                    .expect(
                        "invariant: `FunctionNode` materialises undefined gradients",
                    ),
                [
                    _meta.needs_input_grad(0usize),
                    _meta.needs_input_grad(1usize),
                    _meta.needs_input_grad(2usize),
                ],
                ::core::option::Option::as_ref(&__saved_x_unpacked),
                ::core::option::Option::as_ref(&__saved_w_unpacked),
                ::core::option::Option::as_ref(&__saved_bias_unpacked),
            );
            let __result = match __result {
                ::core::result::Result::Ok(__v) => __v,
                ::core::result::Result::Err(__e) => {
                    return ::core::result::Result::Err(
                        ::core::convert::Into::<::autograd::Error>::into(__e),
                    );
                }
            };
            let (__r0, __r1, __r2) = __result;
            #[allow(unused_mut)]
            let mut __out: ::autograd::__private::GradVec = ::autograd::__private::smallvec::smallvec![
                __r0, __r1, __r2
            ];
            ::core::result::Result::Ok(__out)
        }
        fn release(&self) {
            if let ::core::option::Option::Some(__s) = &self.__saved_x {
                __s.release();
            }
            if let ::core::option::Option::Some(__s) = &self.__saved_w {
                __s.release();
            }
            if let ::core::option::Option::Some(__s) = &self.__saved_bias {
                __s.release();
            }
        }
        fn visit_saved(
            &self,
            __visit: &mut dyn ::core::ops::FnMut(&str, &::autograd::SavedTensor),
        ) {
            let _ = &__visit;
            if let ::core::option::Option::Some(__s) = &self.__saved_x {
                __visit("x", __s);
            }
            if let ::core::option::Option::Some(__s) = &self.__saved_w {
                __visit("w", __s);
            }
            if let ::core::option::Option::Some(__s) = &self.__saved_bias {
                __visit("bias", __s);
            }
        }
    }
    impl __autograd_linear_backward for __autograd_linear_marker {
        fn call(
            x: __autograd_linear_param0<'_>,
            w: __autograd_linear_param1<'_>,
            bias: __autograd_linear_param2<'_>,
        ) -> __autograd_linear_output {
            if !::autograd::is_grad_enabled() {
                return __autograd_linear_forward(x, w, bias);
            }
            let ::core::option::Option::Some(__edges) = ::autograd::__private::next_edges_opt(
                &[::core::option::Option::Some(x), ::core::option::Option::Some(w), bias],
            ) else {
                let _no_grad = ::autograd::no_grad();
                return __autograd_linear_forward(x, w, bias);
            };
            let __saved_x_needed: bool = __edges[(1usize)].is_some();
            let __saved_w_needed: bool = __edges[(0usize)].is_some();
            let __output = {
                let _no_grad = ::autograd::no_grad();
                __autograd_linear_forward(x, w, bias)
            };
            let __output = match __output {
                ::core::result::Result::Ok(__v) => __v,
                ::core::result::Result::Err(__e) => {
                    return ::core::result::Result::Err(__e);
                }
            };
            let __out0 = __output;
            let __out0 = if !(__out0.requires_grad() || false || x.is_same(&__out0)
                || w.is_same(&__out0) || bias.is_some_and(|__i| __i.is_same(&__out0)))
            {
                __out0
            } else {
                __out0.detach()
            };
            let _ = ::autograd::__private::record_node(
                __edges,
                &[&__out0],
                |__weak| __AutogradNode {
                    __saved_x: if __saved_x_needed {
                        ::core::option::Option::Some(::autograd::SavedTensor::input(x))
                    } else {
                        ::core::option::Option::None
                    },
                    __saved_w: if __saved_w_needed {
                        ::core::option::Option::Some(::autograd::SavedTensor::input(w))
                    } else {
                        ::core::option::Option::None
                    },
                    __saved_bias: ::core::option::Option::map(
                        bias,
                        ::autograd::SavedTensor::input,
                    ),
                },
            );
            ::core::result::Result::Ok(__out0)
        }
    }
};
