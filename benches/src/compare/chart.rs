//! The report's chart: one horizontal bar per table, tenure ÷ the best peer (the median of
//! the per-round ratios the table prints), on a log scale with a line at 1. Rows where a
//! lower figure is better (times, bytes) are inverted so that every bar to the right of the
//! line means "tenure better" and every bar to the left "tenure worse". Plain SVG, no
//! dependencies.

use std::fmt::Write as _;

use super::report::{self, median, Better, Results};

/// One bar.
pub struct Bar {
    pub label: String,
    /// > 1: tenure better than the best peer, by this factor.
    pub factor: f64,
    /// The table's own tenure ÷ best peer.
    pub ratio: f64,
    pub better: Better,
}

/// The bars of every table with a tenure figure and at least one peer.
pub fn bars(results: &Results) -> Vec<Bar> {
    let mut bars = Vec::new();
    for table in report::tables() {
        if table.better == Better::None {
            continue;
        }
        let Some((ratios, _)) = report::versus_best(results, &table) else {
            continue;
        };
        let ratio = median(&ratios);
        if !ratio.is_finite() || ratio <= 0.0 {
            continue;
        }
        let factor = match table.better {
            Better::Lower => 1.0 / ratio,
            _ => ratio,
        };
        bars.push(Bar {
            label: table.title.to_owned(),
            factor,
            ratio,
            better: table.better,
        });
    }
    bars
}

fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

/// Tick values on the log axis: 1, 2, 5 × powers of ten.
fn ticks(low: f64, high: f64) -> Vec<f64> {
    let mut out = Vec::new();
    let mut decade = 10f64.powi(low.log10().floor() as i32);
    while decade <= high * 1.0001 {
        for step in [1.0, 2.0, 5.0] {
            let tick = decade * step;
            if tick >= low * 0.9999 && tick <= high * 1.0001 {
                out.push(tick);
            }
        }
        decade *= 10.0;
    }
    out
}

fn tick_label(tick: f64) -> String {
    if tick >= 1.0 {
        format!("{tick:.0}×")
    } else {
        let decimals = (-tick.log10()).ceil().max(1.0) as usize;
        format!("{tick:.decimals$}×")
    }
}

/// A bar's figure: "0.42×", or for a factor below 0.1 "1/230" (tenure 230 times worse).
fn factor_label(factor: f64) -> String {
    if factor >= 0.1 {
        format!("{factor:.2}×")
    } else {
        format!("1/{:.0}", 1.0 / factor)
    }
}

/// The chart as an SVG document. `subtitle` says which run it shows.
pub fn svg(bars: &[Bar], subtitle: &str) -> String {
    let label_width = 430.0;
    let plot_width = 470.0;
    let right_margin = 80.0;
    let row = 19.0;
    let top = 92.0;
    let width = label_width + plot_width + right_margin;
    let height = top + row * bars.len().max(1) as f64 + 46.0;
    // The axis: a 1-2-5 tick at or beyond the extremes, and at least 0.5× .. 2×.
    let smallest = bars.iter().map(|bar| bar.factor).fold(0.5f64, f64::min);
    let largest = bars.iter().map(|bar| bar.factor).fold(2.0f64, f64::max);
    let low = *ticks(smallest / 10.0, smallest).last().unwrap_or(&smallest);
    let high = ticks(largest, largest * 10.0)
        .first()
        .copied()
        .unwrap_or(largest);
    let x =
        |value: f64| label_width + plot_width * (value.ln() - low.ln()) / (high.ln() - low.ln());
    let mut out = String::new();
    let _ = writeln!(
        out,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{width:.0}" height="{height:.0}" viewBox="0 0 {width:.0} {height:.0}" font-family="DejaVu Sans, Arial, sans-serif" font-size="12">"#
    );
    let _ = writeln!(
        out,
        r#"<rect width="100%" height="100%" fill="white"/>
<text x="10" y="22" font-size="16" font-weight="bold">tenure ÷ best peer, per row (log scale)</text>
<text x="10" y="40" fill="dimgray">Right of the 1× line: tenure better than the best peer of that row; left: tenure loses the row. Times and</text>
<text x="10" y="54" fill="dimgray">bytes (lower is better) are inverted, so the bar is always &quot;how many times better&quot;.</text>
<text x="10" y="70" fill="dimgray">{}</text>"#,
        escape(subtitle)
    );
    // Grid and tick labels.
    let bottom = top + row * bars.len() as f64;
    // A wide axis labels only the powers of ten (the 2× and 5× lines stay, unlabelled).
    let wide = high / low > 300.0;
    for tick in ticks(low, high) {
        let at = x(tick);
        let decade = (tick.log10() - tick.log10().round()).abs() < 1e-9;
        let (stroke, dash) = if (tick - 1.0).abs() < 1e-9 {
            ("#000", "")
        } else {
            ("#ccc", r#" stroke-dasharray="3,3""#)
        };
        let _ = writeln!(
            out,
            r#"<line x1="{at:.1}" y1="{:.1}" x2="{at:.1}" y2="{:.1}" stroke="{stroke}"{dash}/>"#,
            top - 6.0,
            bottom + 4.0
        );
        if wide && !decade {
            continue;
        }
        let _ = writeln!(
            out,
            r#"<text x="{at:.1}" y="{:.1}" text-anchor="middle" fill="darkslategray">{}</text>"#,
            bottom + 18.0,
            tick_label(tick)
        );
    }
    let one = x(1.0);
    for (index, bar) in bars.iter().enumerate() {
        let y = top + row * index as f64;
        let end = x(bar.factor.clamp(low, high));
        let (left, right) = if end < one { (end, one) } else { (one, end) };
        let colour = if bar.factor >= 1.0 {
            "#2e7d32"
        } else {
            "#c62828"
        };
        let _ = writeln!(
            out,
            r#"<text x="{:.1}" y="{:.1}" text-anchor="end">{}</text>"#,
            label_width - 8.0,
            y + 13.0,
            escape(&bar.label)
        );
        let _ = writeln!(
            out,
            r#"<rect x="{left:.1}" y="{:.1}" width="{:.1}" height="{:.1}" fill="{colour}"/>"#,
            y + 3.0,
            (right - left).max(1.0),
            row - 6.0
        );
        let direction = if bar.better == Better::Lower {
            "time/size"
        } else {
            "rate"
        };
        let _ = writeln!(
            out,
            r#"<text x="{:.1}" y="{:.1}" fill="darkslategray"><title>table ratio {:.2} ({direction})</title>{}</text>"#,
            right.max(one) + 4.0,
            y + 13.0,
            bar.ratio,
            factor_label(bar.factor)
        );
    }
    let _ = writeln!(
        out,
        r#"<text x="10" y="{:.1}" fill="dimgray">Each bar: the median over the rounds of tenure's figure ÷ the best peer's in the same round. Written by compare --svg.</text>"#,
        bottom + 36.0
    );
    out.push_str("</svg>\n");
    out
}
