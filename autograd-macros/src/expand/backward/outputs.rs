//! What a custom function's forward outputs become (PyTorch's `Function.apply`,
//! `_process_backward_mode_ad`): inputs returned as is made views, captured tensors detached,
//! views marked as made in a custom function, dirty inputs checked, bumped and rebased; and the
//! path without a node, which does the same with nothing recorded.

use proc_macro2::TokenStream;
use quote::{format_ident, quote_spanned};
use syn::Ident;

use super::super::SlotKind;
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
        if !self.builtin {
            let unwrap = self.unwrap();
            let skip = self.fwd.residuals.iter().map(|_| quote_spanned!(loc=> _));
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
                    #fresh
                    #mark
                    #value
                }
            };
        }
        if self.fwd.residuals.is_empty() {
            return forward_call;
        }
        let skip = self.fwd.residuals.iter().map(|_| quote_spanned!(loc=> _));
        let pattern = quote_spanned!(loc=> (#(#elems,)* #(#skip,)*));
        let value = if self.fwd.output.tuple {
            quote_spanned!(loc=> (#(#elems,)*))
        } else {
            quote_spanned!(loc=> #(#outs)*)
        };
        if self.fwd.output.fallible {
            quote_spanned!(loc=> ::core::result::Result::map(#forward_call, |#pattern| #value))
        } else {
            quote_spanned!(loc=> { let #pattern = #forward_call; #value })
        }
    }

    /// B35: a dirty input must come back as an output (the same handle), may not be a leaf that
    /// requires grad, and may not be a view (its base's history cannot be rewritten). Built-in
    /// ops check first, whenever grad mode is on, with the built-in errors, so that a refused op
    /// changes nothing (PyTorch's `check_inplace`); custom functions check after the forward
    /// ([`Self::dirty_checks`]), as PyTorch's `mark_dirty` does.
    pub(super) fn dirty_prechecks(&self) -> TokenStream {
        let (loc, krate) = (self.linked.loc, &self.krate);
        self.dirty
            .iter()
            .filter(|_| self.builtin)
            .map(|(input, _)| {
                let ident = input.ident;
                let others = self.fwd.tensor_inputs().filter(|p| p.ident != ident).map(|p| {
                    let other = p.ident;
                    if p.optional {
                        quote_spanned!(loc=> || #other.is_some_and(#krate::Tensor::requires_grad))
                    } else if matches!(p.kind, ParamKind::Tensors(_)) {
                        quote_spanned!(loc=> || #other.iter().any(#krate::Tensor::requires_grad))
                    } else {
                        quote_spanned!(loc=> || #other.requires_grad())
                    }
                });
                let check = self.try_(quote_spanned!(loc=>
                    #krate::__private::check_inplace(#ident, false #(#others)*)
                ));
                quote_spanned!(loc=> #check;)
            })
            .collect()
    }

    /// After the forward: where each dirty input is among the outputs, and (custom functions)
    /// the rest of B35's checks.
    pub(super) fn dirty_checks(&self) -> TokenStream {
        let (loc, krate, outs) = (self.linked.loc, &self.krate, &self.outs);
        self.dirty
            .iter()
            .map(|(input, pos)| {
                let input = input.ident;
                let not_returned = self.err(quote_spanned!(loc=> #krate::Error::msg(
                    "Some elements marked as dirty during the forward method were not returned as output. The inputs that are modified inplace must all be outputs of the Function."
                )));
                let find = quote_spanned! {loc=>
                    let #pos: usize = match [#(&#outs),*].iter().position(|__o| __o.is_same(#input)) {
                        ::core::option::Option::Some(__i) => __i,
                        ::core::option::Option::None => { #not_returned }
                    };
                };
                if self.builtin {
                    return find;
                }
                let check = self.try_(quote_spanned!(loc=> #krate::__private::check_dirty(#input)));
                quote_spanned! {loc=>
                    #find
                    #check;
                }
            })
            .collect()
    }

    /// PyTorch's `mark_dirty` bumps each dirty input's version once more after a custom
    /// function's forward, recorded or not.
    pub(super) fn mark_dirty(&self) -> TokenStream {
        let (loc, krate) = (self.linked.loc, &self.krate);
        self.dirty
            .iter()
            .filter(|_| !self.builtin)
            .map(|(input, _)| {
                let input = input.ident;
                quote_spanned!(loc=> #krate::__private::mark_dirty(#input);)
            })
            .collect()
    }

    /// A custom function's dirty view moves the node into its base's history (CopySlices), as
    /// the built-in in-place ops' methods do.
    pub(super) fn rebases(&self) -> TokenStream {
        let (loc, krate) = (self.linked.loc, &self.krate);
        self.dirty
            .iter()
            .filter(|_| !self.builtin)
            .map(|(input, _)| {
                let input = input.ident;
                let r = self.try_(
                    quote_spanned!(loc=> #krate::__private::rebase_dirty_view(#input, &__node)),
                );
                quote_spanned!(loc=> #r;)
            })
            .collect()
    }

    /// `#[original]`: a copy of a dirty input taken before the forward modifies it (PyTorch's
    /// `original_self`), differentiable so that a `create_graph` pass reaches the old history.
    pub(super) fn originals(&self) -> TokenStream {
        let (loc, krate) = (self.linked.loc, &self.krate);
        self.slots
            .iter()
            .filter_map(|s| {
                let SlotKind::Input {
                    ident,
                    original: true,
                    ..
                } = s.kind
                else {
                    return None;
                };
                let local = format_ident!("{}_original", s.field);
                let copy = self.try_(quote_spanned!(loc=> #krate::Tensor::copy(#ident)));
                Some(match s.needed_local() {
                    Some(needed) => quote_spanned! {loc=>
                        let #local: ::core::option::Option<#krate::Tensor> =
                            if #needed { ::core::option::Option::Some(#copy) } else { ::core::option::Option::None };
                    },
                    None => quote_spanned!(loc=> let #local: #krate::Tensor = #copy;),
                })
            })
            .collect()
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

    /// `let __is_dirty{j}: bool = ..;`: whether output `j` is a dirty input (custom functions;
    /// nothing for built-in ops and `Vec<Tensor>` forwards). Recorded, from the positions the
    /// dirty checks found; unrecorded (nothing was checked), by comparing handles.
    pub(super) fn dirty_flags(&self, recorded: bool) -> Option<TokenStream> {
        let (loc, outs) = (self.linked.loc, &self.outs);
        if self.builtin || self.fwd.output.vec {
            return None;
        }
        let flags = outs.iter().enumerate().map(|(j, out)| {
            let is_dirty = format_ident!("__is_dirty{}", j, span = loc);
            let value = if recorded {
                let positions = self.dirty.iter().map(|(_, pos)| pos);
                quote_spanned!(loc=> false #(|| #positions == #j)*)
            } else {
                let inputs = self.dirty.iter().map(|(input, _)| input.ident);
                quote_spanned!(loc=> false #(|| #inputs.is_same(&#out))*)
            };
            quote_spanned!(loc=> let #is_dirty: bool = #value;)
        });
        Some(flags.collect())
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
        if self.fwd.output.vec {
            let out = &outs[0];
            let differentiable = if recorded {
                quote_spanned!(loc=> #out.len())
            } else {
                quote_spanned!(loc=> 0)
            };
            return Some(quote_spanned! {loc=>
                #mark(&#out.iter().collect::<::std::vec::Vec<&#krate::Tensor>>(), &[], #differentiable);
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
