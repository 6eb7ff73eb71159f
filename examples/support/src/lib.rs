//! What the main jobs (`train_mlp`, `train_gpt`) share: a minimal PNG writer for their plots and
//! the registration of the font plotters draws their text with.

pub mod png;

use std::sync::Once;

use plotters::style::{FontStyle, register_font};

/// Registers the embedded DejaVu Sans as plotters' `sans-serif` (normal and bold), once per
/// process, so that plots render text without a system font library.
pub fn register_fonts() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        // DejaVu Sans is a valid TrueType font; a failure would only cost the text.
        let _ = register_font("sans-serif", FontStyle::Normal, dejavu::sans::regular());
        let _ = register_font("sans-serif", FontStyle::Bold, dejavu::sans::bold());
    });
}
