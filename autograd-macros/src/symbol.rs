//! The words the macros look for: option names, reserved parameter names and the type names the
//! DSL recognises. Compared through `Symbol`, never as bare strings.

use std::fmt;

use syn::ext::IdentExt;
use syn::{Ident, Path};

#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) struct Symbol(&'static str);

pub(crate) const NAME: Symbol = Symbol("name");
pub(crate) const ONCE_DIFFERENTIABLE: Symbol = Symbol("once_differentiable");
pub(crate) const MATERIALIZE_GRADS: Symbol = Symbol("materialize_grads");
pub(crate) const NON_DIFFERENTIABLE: Symbol = Symbol("non_differentiable");
pub(crate) const DIRTY: Symbol = Symbol("dirty");
pub(crate) const SAVE: Symbol = Symbol("save");
pub(crate) const CRATE: Symbol = Symbol("crate");
pub(crate) const BUILTIN: Symbol = Symbol("builtin");
pub(crate) const DERIVE: Symbol = Symbol("derive");
/// `rule`, `rule = name`: a `builtin` op's derivative rule for derived bodies (runtime-internal,
/// so not listed in [`OPTIONS`]).
pub(crate) const RULE: Symbol = Symbol("rule");
/// `#[backward(f, formula = ..)]`: the grad formula kernel of a built-in backward
/// (runtime-internal).
pub(crate) const FORMULA: Symbol = Symbol("formula");

/// Every option of `#[differentiable(..)]`, in the order the docs list them.
pub(crate) const OPTIONS: [Symbol; 9] = [
    NAME,
    ONCE_DIFFERENTIABLE,
    MATERIALIZE_GRADS,
    NON_DIFFERENTIABLE,
    DIRTY,
    SAVE,
    BUILTIN,
    DERIVE,
    CRATE,
];

/// The `#[backward]` attribute, as `earlier_backward` finds it in a source file.
pub(crate) const BACKWARD: Symbol = Symbol("backward");
/// `#[needed_for(a, ..)]` on a backward parameter: saved only if one of those inputs needs grad.
pub(crate) const NEEDED_FOR: Symbol = Symbol("needed_for");
/// `#[original]` on a backward parameter naming a `dirty` input: its value before the forward.
pub(crate) const ORIGINAL: Symbol = Symbol("original");
/// The attributes a backward parameter may carry, in the order the docs list them.
pub(crate) const PARAM_ATTRS: [Symbol; 2] = [NEEDED_FOR, ORIGINAL];

/// Incoming-gradient parameters of a backward: `grad`, `grad_0`, `grad_out`, ...
pub(crate) const GRAD: Symbol = Symbol("grad");
/// The forward's outputs as seen by a backward: `result`, or `result_0`, `result_1`, ...
pub(crate) const RESULT: Symbol = Symbol("result");
/// Which inputs need a gradient, as a backward parameter (PyTorch's `ctx.needs_input_grad`).
pub(crate) const NEEDS_INPUT_GRAD: Symbol = Symbol("needs_input_grad");

pub(crate) const TENSOR: Symbol = Symbol("Tensor");
pub(crate) const RESULT_TYPE: Symbol = Symbol("Result");
pub(crate) const OPTION_TYPE: Symbol = Symbol("Option");
pub(crate) const VEC_TYPE: Symbol = Symbol("Vec");
pub(crate) const INPUT_METADATA: Symbol = Symbol("InputMetadata");
pub(crate) const BOOL: Symbol = Symbol("bool");
/// `x.detach()` in a derived body: a constant for the derivative.
pub(crate) const DETACH: Symbol = Symbol("detach");
/// The tail `Ok(..)` of a derived body.
pub(crate) const OK: Symbol = Symbol("Ok");

/// The lint attributes that belong on the renamed user function rather than on the wrapper.
pub(crate) const LINT_ATTRS: [Symbol; 5] = [
    Symbol("allow"),
    Symbol("expect"),
    Symbol("warn"),
    Symbol("deny"),
    Symbol("forbid"),
];
/// Attributes copied onto every generated item.
pub(crate) const CFG_ATTRS: [Symbol; 2] = [Symbol("cfg"), Symbol("cfg_attr")];

/// Names a forward's signature macro is not imported under (`expand::names::aliasable`): the
/// macros of the standard prelude, which an import of that name would shadow in the forward's
/// module, and the built-in attributes, which it would make ambiguous.
pub(crate) const RESERVED_MACRO_NAMES: &[&str] = &[
    // std's prelude macros
    "assert",
    "assert_eq",
    "assert_ne",
    "cfg",
    "column",
    "compile_error",
    "concat",
    "dbg",
    "debug_assert",
    "debug_assert_eq",
    "debug_assert_ne",
    "env",
    "eprint",
    "eprintln",
    "file",
    "format",
    "format_args",
    "include",
    "include_bytes",
    "include_str",
    "line",
    "matches",
    "module_path",
    "option_env",
    "panic",
    "print",
    "println",
    "stringify",
    "thread_local",
    "todo",
    "unimplemented",
    "unreachable",
    "vec",
    "write",
    "writeln",
    "is_x86_feature_detected",
    // built-in attributes
    "allow",
    "automatically_derived",
    "bench",
    "cfg_attr",
    "cold",
    "collapse_debuginfo",
    "crate_name",
    "debugger_visualizer",
    "deny",
    "deprecated",
    "derive",
    "diagnostic",
    "doc",
    "expect",
    "export_name",
    "forbid",
    "global_allocator",
    "ignore",
    "inline",
    "link",
    "link_name",
    "link_ordinal",
    "link_section",
    "macro_export",
    "macro_use",
    "must_use",
    "naked",
    "no_builtins",
    "no_implicit_prelude",
    "no_link",
    "no_main",
    "no_mangle",
    "no_std",
    "non_exhaustive",
    "panic_handler",
    "path",
    "proc_macro",
    "proc_macro_attribute",
    "proc_macro_derive",
    "recursion_limit",
    "repr",
    "should_panic",
    "target_feature",
    "test",
    "test_case",
    "track_caller",
    "type_length_limit",
    "used",
    "warn",
    "windows_subsystem",
];

/// `#[derive(Module)]`'s attributes: `#[module(..)]` on the struct and on fields, `#[buffer]`
/// on fields.
pub(crate) const MODULE: Symbol = Symbol("module");
pub(crate) const BUFFER: Symbol = Symbol("buffer");
pub(crate) const SKIP: Symbol = Symbol("skip");
pub(crate) const TRAINING: Symbol = Symbol("training");
pub(crate) const PERSISTENT: Symbol = Symbol("persistent");
pub(crate) const EXTRA_REPR: Symbol = Symbol("extra_repr");
pub(crate) const RENAME: Symbol = Symbol("rename");
pub(crate) const TRANSPARENT: Symbol = Symbol("transparent");
/// The options of `#[module(..)]` on a struct, then on a field, in the order the docs list them.
pub(crate) const MODULE_OPTIONS: [Symbol; 4] = [NAME, EXTRA_REPR, TRANSPARENT, CRATE];
pub(crate) const MODULE_FIELD_OPTIONS: [Symbol; 3] = [SKIP, TRAINING, RENAME];
/// The types `#[derive(Module)]` looks through.
pub(crate) const BOX_TYPE: Symbol = Symbol("Box");
pub(crate) const PHANTOM_DATA: Symbol = Symbol("PhantomData");
/// The traits a boxed child may be a trait object of.
pub(crate) const MODULE_TRAITS: [Symbol; 2] = [Symbol("Module"), Symbol("Forward")];

impl Symbol {
    pub(crate) fn as_str(self) -> &'static str {
        self.0
    }

    /// `ident` is this word, or this word followed by `_` and a suffix, ignoring one leading
    /// underscore (`grad`, `_grad`, `grad_0`, `grad_out`).
    pub(crate) fn is_prefix_of(self, ident: &Ident) -> bool {
        let name = ident.unraw().to_string();
        let name = name.strip_prefix('_').unwrap_or(&name);
        name == self.0
            || name
                .strip_prefix(self.0)
                .is_some_and(|rest| rest.starts_with('_'))
    }

    /// `path` is this one word.
    pub(crate) fn is(self, path: &Path) -> bool {
        path.get_ident().is_some_and(|i| i == self)
    }

    /// The last segment of `path` is this word.
    pub(crate) fn ends(self, path: &Path) -> bool {
        path.segments.last().is_some_and(|s| s.ident == self)
    }
}

impl PartialEq<Symbol> for Ident {
    fn eq(&self, word: &Symbol) -> bool {
        self == word.0
    }
}

impl PartialEq<Symbol> for &Ident {
    fn eq(&self, word: &Symbol) -> bool {
        *self == word.0
    }
}

impl fmt::Display for Symbol {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.0)
    }
}
