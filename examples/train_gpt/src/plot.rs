//! The loss plot: training loss per step and validation loss at each evaluation, drawn with
//! `plotters` into a PNG or an SVG (text in DejaVu Sans, see `train_support`).

use std::path::Path;

use plotters::coord::Shift;
use plotters::prelude::*;
use train_support::{png, register_fonts};

const SIZE: (u32, u32) = (900, 480);
const TRAIN: RGBColor = RGBColor(31, 119, 180);
const VAL: RGBColor = RGBColor(214, 39, 40);

/// Draws the losses into `path` (`.png` or `.svg`; parent directories are created).
///
/// # Errors
///
/// A message when the directory or the file cannot be written.
pub(crate) fn draw(
    path: &Path,
    title: &str,
    train: &[(usize, f64)],
    val: &[(usize, f64)],
) -> Result<(), String> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).map_err(|e| e.to_string())?;
    }
    register_fonts();
    if path.extension().is_some_and(|e| e == "svg") {
        let root = SVGBackend::new(path, SIZE).into_drawing_area();
        draw_on(&root, title, train, val)?;
        return root.present().map_err(|e| e.to_string());
    }
    let mut pixels = vec![0u8; SIZE.0 as usize * SIZE.1 as usize * 3];
    {
        let root = BitMapBackend::with_buffer(&mut pixels, SIZE).into_drawing_area();
        draw_on(&root, title, train, val)?;
        root.present().map_err(|e| e.to_string())?;
    }
    let file = png::encode_rgb(SIZE.0, SIZE.1, &pixels).map_err(|e| e.to_string())?;
    std::fs::write(path, file).map_err(|e| e.to_string())
}

fn draw_on<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    title: &str,
    train: &[(usize, f64)],
    val: &[(usize, f64)],
) -> Result<(), String> {
    let e = |err: DrawingAreaErrorKind<DB::ErrorType>| err.to_string();
    root.fill(&WHITE).map_err(e)?;
    let last = train
        .iter()
        .chain(val)
        .map(|p| p.0)
        .max()
        .unwrap_or(1)
        .max(1);
    let top = train
        .iter()
        .chain(val)
        .map(|p| p.1)
        .fold(0.0f64, f64::max)
        .max(0.1);
    let mut chart = ChartBuilder::on(root)
        .caption(title, ("sans-serif", 22))
        .margin(16)
        .x_label_area_size(40)
        .y_label_area_size(56)
        .build_cartesian_2d(0..last, 0.0..top * 1.05)
        .map_err(e)?;
    chart
        .configure_mesh()
        .x_desc("step")
        .y_desc("cross-entropy (nats per character)")
        .label_style(("sans-serif", 14))
        .draw()
        .map_err(e)?;
    chart
        .draw_series(LineSeries::new(
            train.iter().copied(),
            TRAIN.stroke_width(1),
        ))
        .map_err(e)?
        .label("training batch")
        .legend(|(x, y)| PathElement::new([(x, y), (x + 18, y)], TRAIN.stroke_width(2)));
    chart
        .draw_series(LineSeries::new(val.iter().copied(), VAL.stroke_width(2)))
        .map_err(e)?
        .label("validation")
        .legend(|(x, y)| PathElement::new([(x, y), (x + 18, y)], VAL.stroke_width(2)));
    chart
        .draw_series(val.iter().map(|&p| Circle::new(p, 3, VAL.filled())))
        .map_err(e)?;
    chart
        .configure_series_labels()
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK)
        .label_font(("sans-serif", 14))
        .draw()
        .map_err(e)
}
