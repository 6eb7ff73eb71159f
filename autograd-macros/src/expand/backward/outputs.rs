//! What a custom function's forward outputs become (PyTorch's `Function.apply`,
//! `_process_backward_mode_ad`): inputs returned as is made views, captured tensors detached,
//! views marked as made in a custom function, non-differentiable outputs kept off the node; and
//! the path without a node, which does the same with nothing recorded. The dirty inputs among
//! them are `dirty.rs`'s.

use proc_macro2::TokenStream;
use quote::{format_ident, quote_spanned};
use syn::Ident;

use super::LinkPlan;
use crate::ir::ParamKind;

impl LinkPlan<'_> {
    /// Without a node, the forward's value less its residuals. A custom function's outputs are
    /// made what PyTorch makes of them without a node (see [`Self::fresh`]): an input returned as
    /// is comes back as a view of itself, or a detached alias when it requires grad.
    pub(super) fn unrecorded(&self) -> TokenStream {
        let loc = self.linked.loc;
        let (forward_fn, idents) = (&self.linked.forward_fn, &self.idents);
        let (elems, outs) = (&self.elems, &self.outs);
        let forward_call = quote_spanned!(loc=> #forward_fn(#(#idents),*));
        // The residuals, dropped here unless a `#[jvp]` asks for them (`keep_residuals`).
        let skip: Vec<TokenStream> = (0..self.fwd.residuals.len())
            .map(|k| {
                let r = format_ident!("__res{}", k, span = loc);
                quote_spanned!(loc=> #r)
            })
            .collect();
        let keep = self.keep_residuals(false);
        if !self.builtin {
            let unwrap = self.unwrap();
            let destructure = if self.fwd.output.tuple || !self.fwd.residuals.is_empty() {
                quote_spanned!(loc=> let (#(#elems,)* #(#skip,)*) = __output;)
            } else {
                quote_spanned!(loc=> let #(#outs)* = __output;)
            };
            let fresh = self.fresh(false);
            let mark = self.mark_views(false);
            let mark_dirty = self.mark_dirty();
            let value = self.value(self.fwd.output.fallible);
            return quote_spanned! {loc=>
                {
                    let __output = #forward_call;
                    #unwrap
                    #mark_dirty
                    #destructure
                    #keep
                    #fresh
                    #mark
                    #value
                }
            };
        }
        if self.fwd.residuals.is_empty() {
            return forward_call;
        }
        let unwrap = self.unwrap();
        let value = self.value(self.fwd.output.fallible);
        quote_spanned! {loc=>
            {
                let __output = #forward_call;
                #unwrap
                let (#(#elems,)* #(#skip,)*) = __output;
                #keep
                #value
            }
        }
    }

    /// The outputs made what PyTorch's `_process_backward_mode_ad` makes of them
    /// (`custom_output` in the runtime): an input returned as is becomes a view of itself (or,
    /// unrecorded and requiring grad, a detached alias, so that no gradient escapes), a captured
    /// tensor with history a detached alias; only dirty inputs keep their handle. `recorded`:
    /// whether a node is being recorded (the outputs are then differentiable, unless marked
    /// `non_differentiable`). A built-in forward returns new tensors by contract: that is only
    /// asserted, in debug builds.
    pub(super) fn fresh(&self, recorded: bool) -> TokenStream {
        let (loc, krate, outs, fwd) = (self.linked.loc, &self.krate, &self.outs, self.fwd);
        let builtin = self.builtin;
        let inputs: Vec<&Ident> = fwd
            .tensor_inputs()
            .filter(|p| matches!(p.kind, ParamKind::Tensor(_)) && !p.optional)
            .map(|p| p.ident)
            .collect();
        let optional_inputs: Vec<&Ident> = fwd
            .tensor_inputs()
            .filter(|p| p.optional)
            .map(|p| p.ident)
            .collect();
        let slice_inputs: Vec<&Ident> = fwd
            .tensor_inputs()
            .filter(|p| matches!(p.kind, ParamKind::Tensors(_)))
            .map(|p| p.ident)
            .collect();
        let is_input = |t: TokenStream| {
            quote_spanned! {loc=>
                false #(|| #inputs.is_same(#t))*
                    #(|| #optional_inputs.is_some_and(|__i| __i.is_same(#t)))*
                    #(|| #slice_inputs.iter().any(|__i| __i.is_same(#t)))*
            }
        };
        // The same tensor returned twice stays one tensor, the node's output at both positions
        // (PyTorch's `test_return_duplicate`), unless it is an input returned as is: each
        // occurrence of an input is a view of its own, as PyTorch makes one view per
        // occurrence. A dirty input is the input itself at every position.
        let is_plain_input = |t: TokenStream| {
            let plain = |ps: &[&Ident]| -> Vec<Ident> {
                ps.iter()
                    .filter(|i| !self.args.dirty().iter().any(|d| d == **i))
                    .map(|i| (*i).clone())
                    .collect()
            };
            let (inputs, optional_inputs) = (plain(&inputs), plain(&optional_inputs));
            quote_spanned! {loc=>
                false #(|| #inputs.is_same(#t))*
                    #(|| #optional_inputs.is_some_and(|__i| __i.is_same(#t)))*
                    #(|| #slice_inputs.iter().any(|__i| __i.is_same(#t)))*
            }
        };
        let custom_output = quote_spanned!(loc=> #krate::__private::custom_output);
        if fwd.output.vec {
            let out = &outs[0];
            let taken = is_input(quote_spanned!(loc=> __o));
            return if builtin {
                quote_spanned! {loc=>
                    ::core::debug_assert!(
                        !#out.iter().any(|__o| __o.has_history() || #taken),
                        "a `builtin` forward returns new tensors"
                    );
                }
            } else {
                quote_spanned! {loc=>
                    let #out: ::std::vec::Vec<#krate::Tensor> = {
                        // For each output, whether it is an input, and the first earlier output
                        // that is the same tensor.
                        let __kinds: ::std::vec::Vec<(bool, ::core::option::Option<usize>)> = #out
                            .iter()
                            .enumerate()
                            .map(|(__j, __o)| {
                                if #taken { return (true, ::core::option::Option::None); }
                                (false, #out[..__j].iter().position(|__e| __e.is_same(__o)))
                            })
                            .collect();
                        let mut __fresh: ::std::vec::Vec<#krate::Tensor> =
                            ::std::vec::Vec::with_capacity(#out.len());
                        for (__o, (__input, __dup)) in ::core::iter::Iterator::zip(#out.into_iter(), __kinds) {
                            let __o = match __dup {
                                ::core::option::Option::Some(__i) => ::core::clone::Clone::clone(&__fresh[__i]),
                                ::core::option::Option::None => #custom_output(__o, __input, false, #recorded),
                            };
                            __fresh.push(__o);
                        }
                        __fresh
                    };
                }
            };
        }
        let dirty_flags = self.dirty_flags(recorded);
        let dups = (1..outs.len()).filter(|_| !builtin).map(|j| {
            let (earlier, out) = (&outs[..j], &outs[j]);
            let dup = format_ident!("__dup{}", j, span = loc);
            let plain = is_plain_input(quote_spanned!(loc=> &#out));
            quote_spanned! {loc=>
                let #dup: ::core::option::Option<usize> = if #plain {
                    ::core::option::Option::None
                } else {
                    [#(&#earlier),*].iter().position(|__e| __e.is_same(&#out))
                };
            }
        });
        let processed = outs.iter().enumerate().map(|(j, out)| {
            let taken = is_input(quote_spanned!(loc=> &#out));
            if builtin {
                let dirty_positions: Vec<&Ident> = self.dirty.iter().map(|(_, pos)| pos).collect();
                let keep = (!dirty_positions.is_empty())
                    .then(|| quote_spanned!(loc=> [#(#dirty_positions),*].contains(&#j) ||));
                let earlier = &outs[..j];
                let earlier_check = (j > 0).then(
                    || quote_spanned!(loc=> || [#(&#earlier),*].iter().any(|__e| __e.is_same(&#out))),
                );
                // A built-in's fresh view requires grad through its base already: what must
                // not be there is history of its own.
                return quote_spanned! {loc=>
                    ::core::debug_assert!(
                        #keep !(#out.has_history() || #taken #earlier_check),
                        "a `builtin` forward returns new tensors (or its `dirty` inputs)"
                    );
                };
            }
            let is_dirty = format_ident!("__is_dirty{}", j, span = loc);
            let differentiable = recorded && !self.non_diff[j];
            let fresh = quote_spanned! {loc=>
                {
                    let __input: bool = #taken;
                    #custom_output(#out, __input, #is_dirty, #differentiable)
                }
            };
            if j == 0 {
                return quote_spanned!(loc=> let #out = #fresh;);
            }
            let dup = format_ident!("__dup{}", j, span = loc);
            let arms = outs[..j].iter().enumerate().map(|(i, earlier)| {
                quote_spanned!(loc=> ::core::option::Option::Some(#i) => ::core::clone::Clone::clone(&#earlier),)
            });
            quote_spanned! {loc=>
                let #out = match #dup {
                    #(#arms)*
                    _ => #fresh,
                };
            }
        });
        dirty_flags
            .into_iter()
            .chain(dups)
            .chain(processed)
            .collect()
    }

    /// After the node is attached (or none was recorded): the outputs that are views are marked
    /// as made in a custom function (`mark_custom_outputs`), so that PyTorch refuses an in-place
    /// op on them, and a use after their base changed.
    pub(super) fn mark_views(&self, recorded: bool) -> Option<TokenStream> {
        let (loc, krate, outs) = (self.linked.loc, &self.krate, &self.outs);
        if self.builtin {
            return None;
        }
        let mark = quote_spanned!(loc=> #krate::__private::mark_custom_outputs);
        let missing = self.jvp_missing();
        if self.fwd.output.vec {
            let out = &outs[0];
            let differentiable = if recorded {
                quote_spanned!(loc=> #out.len())
            } else {
                quote_spanned!(loc=> 0)
            };
            return Some(quote_spanned! {loc=>
                #mark(&#out.iter().collect::<::std::vec::Vec<&#krate::Tensor>>(), &[], #differentiable);
                #missing
            });
        }
        let flags = (0..outs.len()).map(|j| format_ident!("__is_dirty{}", j, span = loc));
        let differentiable = if recorded {
            self.non_diff.iter().filter(|nd| !**nd).count()
        } else {
            0
        };
        Some(quote_spanned! {loc=>
            #mark(&[#(&#outs),*], &[#(#flags),*], #differentiable);
            #missing
        })
    }

    /// A hand-written custom function called on dual inputs without a `#[jvp]`: its outputs'
    /// tangents hold PyTorch's error (see `jvp_dispatch`).
    fn jvp_missing(&self) -> Option<TokenStream> {
        if self.builtin || self.args.derived {
            return None;
        }
        let (loc, krate, outs) = (self.linked.loc, &self.krate, &self.outs);
        let refs = if self.fwd.output.vec {
            let out = &outs[0];
            quote_spanned!(loc=> &#out.iter().collect::<::std::vec::Vec<&#krate::Tensor>>())
        } else {
            quote_spanned!(loc=> &[#(&#outs),*])
        };
        Some(quote_spanned! {loc=>
            if __fw_missing {
                #krate::__private::forward_ad::jvp_missing(#refs);
            }
        })
    }

    /// Which output of the node a saved output is: the last position of that tensor among the
    /// outputs, since `record_node` gives a tensor returned twice the later output number.
    pub(super) fn output_nr(&self, t: TokenStream, nr: TokenStream) -> TokenStream {
        let (loc, outs) = (self.linked.loc, &self.outs);
        if self.builtin || self.fwd.num_outputs() < 2 {
            return nr;
        }
        quote_spanned! {loc=>
            [#(&#outs),*].iter().rposition(|__e| __e.is_same(#t)).unwrap_or(#nr)
        }
    }

    /// Non-differentiable outputs still count as node inputs (their gradient slot is zeros or
    /// `None`), but the node is attached to a throwaway alias so they never require grad (B34).
    pub(super) fn non_diff_aliases(&self) -> TokenStream {
        let loc = self.linked.loc;
        self.outs
            .iter()
            .zip(&self.non_diff)
            .filter(|(_, nd)| **nd)
            .map(|(out, _)| {
                let alias = format_ident!("{}_alias", out);
                quote_spanned!(loc=> let #alias = #out.detach();)
            })
            .collect()
    }
}
