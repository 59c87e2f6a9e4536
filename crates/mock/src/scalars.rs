//! [`number`] and [`fit_length`]: the scalar side of the generator — a realistic number for a
//! property (percentages 0–100, confidences 0–1, `min` low and `max` high, counts, ratings)
//! inside the schema's bounds, exclusive bounds and `multipleOf`; and a string brought within
//! `minLength`/`maxLength`.

use crate::shape::Shape;
use crate::words;
use rand::RngExt;
use rand::rngs::StdRng;
use serde_json::{Number, Value};

/// A number for `name` within the bounds of `shape` (an integer when `integer`).
pub(crate) fn number(
    shape: &Shape<'_>,
    name: Option<&str>,
    integer: bool,
    rng: &mut StdRng,
) -> Value {
    let (mut lo, mut hi, whole) = default_range(name, integer);
    let floor = max_opt(shape.minimum, shape.exclusive_minimum);
    let ceiling = min_opt(shape.maximum, shape.exclusive_maximum);
    lo = floor.map_or(lo, |f| lo.max(f));
    hi = ceiling.map_or(hi, |c| hi.min(c));
    if lo > hi {
        // The name's usual range lies outside the schema's: take the schema's.
        lo = floor.unwrap_or_else(|| ceiling.map_or(0.0, |c| c - 10.0));
        hi = ceiling.unwrap_or(lo + 10.0);
    }
    let open_lo = shape.exclusive_minimum.is_some_and(|e| e >= lo);
    let open_hi = shape.exclusive_maximum.is_some_and(|e| e <= hi);
    // An exclusive bound on a whole step is stepped over.
    let past = |open: bool, x: f64| if open && x.fract() == 0.0 { 1.0 } else { 0.0 };
    if let Some(step) = shape.multiple_of {
        let first = (lo / step).ceil() + past(open_lo, lo / step);
        let last = (hi / step).floor() - past(open_hi, hi / step);
        let k = pick_i64(rng, first as i64, last as i64) as f64;
        return number_value(k * step, integer);
    }
    if integer || whole {
        let first = (lo.ceil() + past(open_lo, lo)) as i64;
        let last = (hi.floor() - past(open_hi, hi)) as i64;
        if integer || first <= last {
            return Value::from(pick_i64(rng, first, last));
        }
    }
    let x = if hi > lo {
        let u: f64 = rng.random();
        let x = ((lo + (hi - lo) * u) * 100.0).round() / 100.0;
        if (open_lo && x <= lo) || (open_hi && x >= hi) || x < lo || x > hi {
            (lo + hi) / 2.0
        } else {
            x
        }
    } else {
        lo
    };
    number_value(x, false)
}

/// The usual range of a number called `name`, and whether it is a whole number even where the
/// schema allows fractions (`min`, `max`, counts, percentages).
fn default_range(name: Option<&str>, integer: bool) -> (f64, f64, bool) {
    let name = words::snake(name.unwrap_or_default());
    let word = |w: &str| name == w || name.split('_').any(|part| part == w);
    let any = |ws: &[&str]| ws.iter().any(|w| word(w));
    if any(&["percentage", "percent", "progress"]) {
        (0.0, 100.0, true)
    } else if any(&["confidence", "probability", "ratio", "score"]) {
        (0.0, 1.0, false)
    } else if any(&["min", "minimum", "lower", "start"]) {
        (0.0, 1.0, true)
    } else if any(&["max", "maximum", "upper", "end"]) {
        (5.0, 10.0, true)
    } else if any(&["tokens", "count", "total", "size"]) {
        (20.0, 800.0, true)
    } else if any(&["rating", "stars"]) {
        (1.0, 5.0, true)
    } else if word("year") {
        (2019.0, 2026.0, true)
    } else if word("age") {
        (18.0, 80.0, true)
    } else if integer {
        (1.0, 10.0, true)
    } else {
        (0.0, 100.0, false)
    }
}

fn max_opt(a: Option<f64>, b: Option<f64>) -> Option<f64> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.max(b)),
        (a, b) => a.or(b),
    }
}

fn min_opt(a: Option<f64>, b: Option<f64>) -> Option<f64> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

/// A number in `lo..=hi`, or `lo` when the range is empty.
fn pick_i64(rng: &mut StdRng, lo: i64, hi: i64) -> i64 {
    if hi > lo {
        rng.random_range(lo..=hi)
    } else {
        lo
    }
}

fn number_value(x: f64, integer: bool) -> Value {
    if integer && x.fract() == 0.0 && x.abs() < 9.0e15 {
        return Value::from(x as i64);
    }
    Number::from_f64(x).map_or(Value::from(0), Value::Number)
}

/// `text` padded with more words or cut so that its length (in characters) is in bounds.
pub(crate) fn fit_length(
    mut text: String,
    min: Option<u64>,
    max: Option<u64>,
    rng: &mut StdRng,
) -> String {
    let min = min.unwrap_or(0).min(1 << 16) as usize;
    let max = max
        .map_or(usize::MAX, |m| m.min(usize::MAX as u64) as usize)
        .max(min);
    let mut len = text.chars().count();
    while len < min {
        if !text.is_empty() {
            text.push(' ');
            len += 1;
        }
        let sentence = words::sentence(rng);
        text.push_str(sentence);
        len += sentence.chars().count();
    }
    if len > max {
        let cut: String = text.chars().take(max).collect();
        let trimmed = cut.trim_end();
        text = if trimmed.chars().count() >= min {
            trimmed.to_owned()
        } else {
            cut
        };
    }
    text
}
