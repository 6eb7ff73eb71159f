//! The loss plot: train/test loss (left) and train/test accuracy (right) per epoch, drawn with
//! `plotters` into a PNG or an SVG.
//!
//! Text in the PNG is rendered by `ab_glyph` from the DejaVu Sans font the `dejavu` crate embeds,
//! so no system font library (fontconfig, freetype) is needed; the PNG file is written by
//! `train_support::png` from the pixels plotters draws into a buffer.

use plotters::coord::Shift;
use plotters::prelude::*;

use train_support::{png, register_fonts};

use crate::cli::{PlotFormat, PlotPath};
use crate::train::EpochStats;

const SIZE: (u32, u32) = (1100, 460);
const TRAIN: RGBColor = RGBColor(31, 119, 180);
const TEST: RGBColor = RGBColor(214, 39, 40);

/// Why the plot could not be written.
#[derive(Debug, thiserror::Error)]
#[error("cannot write the plot {path}: {message}")]
pub(crate) struct PlotError {
    path: String,
    message: String,
}

/// Draws `history` into `plot.path` (parent directories are created); `title` heads the figure.
///
/// # Errors
///
/// [`PlotError`] when the directory or file cannot be written.
pub(crate) fn draw(plot: &PlotPath, title: &str, history: &[EpochStats]) -> Result<(), PlotError> {
    let fail = |message: String| PlotError {
        path: plot.path.display().to_string(),
        message,
    };
    if let Some(dir) = plot.path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).map_err(|e| fail(e.to_string()))?;
    }
    register_fonts();
    match plot.format {
        PlotFormat::Png => {
            let mut pixels = vec![0u8; SIZE.0 as usize * SIZE.1 as usize * 3];
            {
                let root = BitMapBackend::with_buffer(&mut pixels, SIZE).into_drawing_area();
                draw_on(&root, title, history).map_err(fail)?;
                root.present().map_err(|e| fail(e.to_string()))?;
            }
            let file = png::encode_rgb(SIZE.0, SIZE.1, &pixels).map_err(|e| fail(e.to_string()))?;
            std::fs::write(&plot.path, file).map_err(|e| fail(e.to_string()))
        }
        PlotFormat::Svg => {
            let root = SVGBackend::new(&plot.path, SIZE).into_drawing_area();
            draw_on(&root, title, history).map_err(fail)?;
            root.present().map_err(|e| fail(e.to_string()))
        }
    }
}

fn draw_on<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    title: &str,
    history: &[EpochStats],
) -> Result<(), String> {
    let err = |e: DrawingAreaErrorKind<DB::ErrorType>| e.to_string();
    root.fill(&WHITE).map_err(err)?;
    let root = root
        .titled(title, ("sans-serif", 22).into_font().style(FontStyle::Bold))
        .map_err(err)?;
    let (left, right) = root.split_horizontally(SIZE.0 / 2);
    let epochs = history.len().max(1) as f64;
    let x_range = if history.len() > 1 {
        1.0..epochs
    } else {
        0.5..1.5
    };

    let losses = history.iter().flat_map(|s| [s.train_loss, s.test_loss]);
    let max_loss = losses.filter(|v| v.is_finite()).fold(0.0f64, f64::max) * 1.05;
    let loss_series = [
        ("train loss", TRAIN, series(history, |s| s.train_loss)),
        ("test loss", TEST, series(history, |s| s.test_loss)),
    ];
    let loss_axes = Axes {
        y_label: "loss (cross-entropy)",
        y_decimals: 2,
        legend: SeriesLabelPosition::UpperRight,
    };
    panel(
        &left,
        &loss_axes,
        x_range.clone(),
        0.0..max_loss.max(1e-3),
        &loss_series,
    )?;

    let low = history
        .iter()
        .flat_map(|s| [s.train_accuracy, s.test_accuracy])
        .fold(1.0f64, f64::min);
    let acc_floor = ((low * 100.0 / 10.0).floor() * 10.0).clamp(0.0, 90.0);
    let acc_series = [
        (
            "train accuracy",
            TRAIN,
            series(history, |s| 100.0 * s.train_accuracy),
        ),
        (
            "test accuracy",
            TEST,
            series(history, |s| 100.0 * s.test_accuracy),
        ),
    ];
    let acc_axes = Axes {
        y_label: "accuracy (%)",
        y_decimals: 0,
        legend: SeriesLabelPosition::LowerRight,
    };
    panel(&right, &acc_axes, x_range, acc_floor..100.5, &acc_series)
}

/// How one panel labels its axes and where its legend sits (away from the curves).
struct Axes {
    y_label: &'static str,
    y_decimals: usize,
    legend: SeriesLabelPosition,
}

/// One curve: its legend label, colour and `(epoch, value)` points.
type Line<'a> = (&'a str, RGBColor, Vec<(f64, f64)>);

fn series(history: &[EpochStats], f: impl Fn(&EpochStats) -> f64) -> Vec<(f64, f64)> {
    history.iter().map(|s| (s.epoch as f64, f(s))).collect()
}

fn panel<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    axes: &Axes,
    x: std::ops::Range<f64>,
    y: std::ops::Range<f64>,
    lines: &[Line<'_>],
) -> Result<(), String> {
    let err = |e: DrawingAreaErrorKind<DB::ErrorType>| e.to_string();
    // Epochs are whole numbers: at most one label per epoch, none between two.
    let x_labels = ((x.end - x.start).round() as usize + 1).clamp(2, 11);
    let mut chart = ChartBuilder::on(area)
        .margin(14)
        .x_label_area_size(40)
        .y_label_area_size(56)
        .build_cartesian_2d(x, y)
        .map_err(err)?;
    chart
        .configure_mesh()
        .x_desc("epoch")
        .y_desc(axes.y_label)
        .x_labels(x_labels)
        .x_label_formatter(&|v| {
            if (v - v.round()).abs() < 1e-9 {
                format!("{v:.0}")
            } else {
                String::new()
            }
        })
        .y_label_formatter(&|v| format!("{v:.*}", axes.y_decimals))
        .light_line_style(RGBColor(244, 244, 244))
        .label_style(("sans-serif", 14))
        .axis_desc_style(("sans-serif", 16))
        .draw()
        .map_err(err)?;
    for (name, color, points) in lines {
        let color = *color;
        chart
            .draw_series(LineSeries::new(
                points.iter().copied(),
                color.stroke_width(2),
            ))
            .map_err(err)?
            .label(*name)
            .legend(move |(x, y)| {
                PathElement::new(vec![(x, y), (x + 20, y)], color.stroke_width(2))
            });
        chart
            .draw_series(points.iter().map(|&p| Circle::new(p, 3, color.filled())))
            .map_err(err)?;
    }
    chart
        .configure_series_labels()
        .position(axes.legend.clone())
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK.mix(0.4))
        .label_font(("sans-serif", 14))
        .draw()
        .map_err(err)
}

/// Whether `path` holds a PNG (by its signature).
#[cfg(test)]
fn is_png(path: &std::path::Path) -> bool {
    std::fs::read(path).is_ok_and(|b| b.starts_with(png::SIGNATURE))
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use super::*;

    fn history() -> Vec<EpochStats> {
        (1..=5)
            .map(|e| EpochStats {
                epoch: e,
                train_loss: 1.0 / e as f64,
                train_accuracy: 0.8 + 0.03 * e as f64,
                test_loss: 1.2 / e as f64,
                test_accuracy: 0.78 + 0.03 * e as f64,
                samples_per_s: 1e5,
            })
            .collect()
    }

    #[test]
    fn writes_png_and_svg() {
        let dir = std::env::temp_dir().join(format!("train_mlp_plot_{}", std::process::id()));
        let png: PlotPath = dir
            .join("nested/loss.png")
            .to_str()
            .unwrap()
            .parse()
            .unwrap();
        draw(&png, "test run", &history()).unwrap();
        assert!(is_png(&png.path));

        let svg: PlotPath = dir.join("loss.svg").to_str().unwrap().parse().unwrap();
        draw(&svg, "test run", &history()[..1]).unwrap();
        let text = std::fs::read_to_string(&svg.path).unwrap();
        assert!(text.starts_with("<svg"), "{}", &text[..80.min(text.len())]);
        for label in ["test run", "train loss", "test accuracy", "epoch"] {
            assert!(text.contains(label), "{label} missing");
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn unwritable_path_is_an_error() {
        let file = std::env::temp_dir().join(format!("train_mlp_plot_file_{}", std::process::id()));
        std::fs::write(&file, b"x").unwrap();
        // A directory under a regular file cannot be created.
        let plot: PlotPath = PathBuf::from(&file)
            .join("sub/loss.png")
            .to_str()
            .unwrap()
            .parse()
            .unwrap();
        let err = draw(&plot, "t", &history()).unwrap_err();
        assert!(
            err.to_string().starts_with("cannot write the plot"),
            "{err}"
        );
        std::fs::remove_file(&file).unwrap();
    }
}
