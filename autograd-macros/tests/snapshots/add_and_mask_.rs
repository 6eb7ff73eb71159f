// #[differentiable(builtin , dirty (x) , non_differentiable (result_1) , crate = "crate")]
fn add_and_mask_(x: &Tensor, y: &Tensor) -> Result<(Tensor, Tensor)> {
    <__autograd_add_and_mask__marker as __autograd_add_and_mask__backward>::call(x, y)
}
#[doc(hidden)]
#[allow(non_snake_case)]
pub(crate) fn __autograd_add_and_mask__forward(
    x: &Tensor,
    y: &Tensor,
) -> Result<(Tensor, Tensor)> {
    kernel(x, y)
}
#[doc(hidden)]
#[allow(non_camel_case_types, dead_code)]
pub(crate) struct __autograd_add_and_mask__marker;
#[doc(hidden)]
#[allow(non_camel_case_types)]
#[diagnostic::on_unimplemented(
    message = "`#[differentiable]` function `add_and_mask_` has no `#[backward]`",
    label = "add a function annotated `#[backward(add_and_mask_)]`",
    note = "the backward names the incoming gradients first (`grad`), then any forward parameters or outputs (`result`) it needs, and returns one gradient per `&Tensor` input"
)]
pub(crate) trait __autograd_add_and_mask__backward {
    fn call(x: &Tensor, y: &Tensor) -> Result<(Tensor, Tensor)>;
}
#[doc(hidden)]
#[allow(non_camel_case_types, dead_code, private_interfaces)]
pub(crate) type __autograd_add_and_mask__param0<'__autograd> = &'__autograd Tensor;
#[doc(hidden)]
#[allow(non_camel_case_types, dead_code, private_interfaces)]
pub(crate) type __autograd_add_and_mask__param1<'__autograd> = &'__autograd Tensor;
#[doc(hidden)]
#[allow(non_camel_case_types, dead_code, private_interfaces)]
pub(crate) type __autograd_add_and_mask__output = Result<(Tensor, Tensor)>;
#[doc(hidden)]
#[allow(unused_macros)]
macro_rules! __autograd_add_and_mask__signature {
    ($($backward:tt)*) => {
        crate ::__check_backward! { { builtin, dirty(x), non_differentiable(result_1),
        crate = "crate" } { fn add_and_mask_(x : & Tensor, y : & Tensor) -> Result <
        (Tensor, Tensor) > } $($backward)* }
    };
}
#[doc(hidden)]
#[allow(unused_imports)]
pub(crate) use __autograd_add_and_mask__signature;

// #[backward(add_and_mask_)]
fn add_and_mask__backward(grad_0: &Tensor, _grad_1: &Tensor) -> (Tensor, Tensor) {
    (grad_0.clone(), grad_0.clone())
}
__autograd_add_and_mask__signature! {
    { add_and_mask_ } { add_and_mask__backward } { fn add_and_mask__backward(grad_0 : &
    Tensor, _grad_1 : & Tensor) -> (Tensor, Tensor) }
}

// __check_backward! (through the signature macro)
const _: () = {
    struct __AutogradNode {}
    impl crate::__private::Backward for __AutogradNode {
        const NAME: &'static str = "AddAndMaskBackward0";
        const SKIP_IF_NO_GRAD: bool = true;
        const MATERIALIZE_GRADS: bool = true;
        fn backward(
            &self,
            _meta: &crate::NodeMeta,
            grads: crate::__private::GradVec,
        ) -> crate::Result<crate::__private::GradVec> {
            let __grad_0: ::core::option::Option<&crate::Tensor> = grads
                .get(0usize)
                .and_then(::core::option::Option::as_ref);
            let __grad_1: ::core::option::Option<&crate::Tensor> = grads
                .get(1usize)
                .and_then(::core::option::Option::as_ref);
            let __result = add_and_mask__backward(
                __grad_0
                    .expect(
                        "invariant: `FunctionNode` materialises undefined gradients",
                    ),
                __grad_1
                    .expect("invariant: `FunctionNode` materialises undefined gradients"),
            );
            let (__r0, __r1) = __result;
            #[allow(unused_mut)]
            let mut __out: crate::__private::GradVec = crate::__private::smallvec::smallvec![
                ::core::option::Option::Some(__r0), ::core::option::Option::Some(__r1)
            ];
            ::core::result::Result::Ok(__out)
        }
        fn release(&self) {}
        fn visit_saved(
            &self,
            __visit: &mut dyn ::core::ops::FnMut(&str, &crate::SavedTensor),
        ) {
            let _ = &__visit;
        }
    }
    impl __autograd_add_and_mask__backward for __autograd_add_and_mask__marker {
        fn call(
            x: __autograd_add_and_mask__param0<'_>,
            y: __autograd_add_and_mask__param1<'_>,
        ) -> __autograd_add_and_mask__output {
            match crate::__private::check_inplace(x, false || y.requires_grad()) {
                ::core::result::Result::Ok(__v) => __v,
                ::core::result::Result::Err(__e) => {
                    return ::core::result::Result::Err(::core::convert::Into::into(__e));
                }
            };
            if !crate::is_grad_enabled() {
                return __autograd_add_and_mask__forward(x, y);
            }
            let ::core::option::Option::Some(__edges) = crate::__private::next_edges(
                &[x, y],
            ) else {
                let _no_grad = crate::no_grad();
                return __autograd_add_and_mask__forward(x, y);
            };
            let __output = {
                let _no_grad = crate::no_grad();
                __autograd_add_and_mask__forward(x, y)
            };
            let __output = match __output {
                ::core::result::Result::Ok(__v) => __v,
                ::core::result::Result::Err(__e) => {
                    return ::core::result::Result::Err(__e);
                }
            };
            let (__out0, __out1) = __output;
            let __dirty_x: usize = match [&__out0, &__out1]
                .iter()
                .position(|__o| __o.is_same(x))
            {
                ::core::option::Option::Some(__i) => __i,
                ::core::option::Option::None => {
                    return ::core::result::Result::Err(
                        ::core::convert::Into::into(
                            crate::Error::msg(
                                "Some elements marked as dirty during the forward method were not returned as output.",
                            ),
                        ),
                    );
                }
            };
            ::core::debug_assert!(
                [__dirty_x].contains(& 0usize) || ! (__out0.requires_grad() || false || x
                .is_same(& __out0) || y.is_same(& __out0)),
                "a `builtin` forward returns new tensors (or its `dirty` inputs)"
            );
            ::core::debug_assert!(
                [__dirty_x].contains(& 1usize) || ! (__out1.requires_grad() || false || x
                .is_same(& __out1) || y.is_same(& __out1) || [& __out0].iter().any(| __e
                | __e.is_same(& __out1))),
                "a `builtin` forward returns new tensors (or its `dirty` inputs)"
            );
            let __out1_alias = __out1.detach();
            let _ = crate::__private::record_node(
                __edges,
                &[&__out0, &__out1_alias],
                |__weak| __AutogradNode {},
            );
            ::core::result::Result::Ok((__out0, __out1))
        }
    }
};
