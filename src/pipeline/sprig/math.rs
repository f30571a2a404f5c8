//! Sprig's integer and float arithmetic and its conversions.

use gtmpl::{Func, Value};

use super::{arity, at_least, err, float, int, string, strval, text, to_f64, to_i64, Out};

pub(super) const FUNCS: &[(&str, Func)] = &[
    ("add1", add1),
    ("add", add),
    ("sub", sub),
    ("div", div),
    ("mod", modulo),
    ("mul", mul),
    ("randInt", rand_int),
    ("add1f", add1f),
    ("addf", addf),
    ("subf", subf),
    ("divf", divf),
    ("mulf", mulf),
    ("biggest", max),
    ("max", max),
    ("min", min),
    ("maxf", maxf),
    ("minf", minf),
    ("ceil", ceil),
    ("floor", floor),
    ("round", round),
    ("atoi", atoi),
    ("int", to_int),
    ("int64", to_int),
    ("float64", to_float),
    ("seq", seq),
    ("until", until),
    ("untilStep", until_step),
    ("toStrings", to_strings),
    ("toDecimal", to_decimal),
];

fn add1(args: &[Value]) -> Out {
    arity("add1", args, 1)?;
    int(to_i64(&args[0]).wrapping_add(1))
}

fn add(args: &[Value]) -> Out {
    int(args.iter().map(to_i64).fold(0i64, i64::wrapping_add))
}

fn pair(name: &str, args: &[Value]) -> Result<(i64, i64), gtmpl::FuncError> {
    arity(name, args, 2)?;
    Ok((to_i64(&args[0]), to_i64(&args[1])))
}

fn sub(args: &[Value]) -> Out {
    let (a, b) = pair("sub", args)?;
    int(a.wrapping_sub(b))
}

fn div(args: &[Value]) -> Out {
    let (a, b) = pair("div", args)?;
    a.checked_div(b).map(Value::from).ok_or_else(|| err("div", "integer divide by zero"))
}

fn modulo(args: &[Value]) -> Out {
    let (a, b) = pair("mod", args)?;
    a.checked_rem(b).map(Value::from).ok_or_else(|| err("mod", "integer divide by zero"))
}

fn mul(args: &[Value]) -> Out {
    at_least("mul", args, 1)?;
    int(args.iter().map(to_i64).fold(1i64, i64::wrapping_mul))
}

fn rand_int(args: &[Value]) -> Out {
    let (lo, hi) = pair("randInt", args)?;
    if hi <= lo {
        return Err(err("randInt", "the maximum must be above the minimum"));
    }
    int(fastrand::i64(lo..hi))
}

/// sprig's float functions work in decimals: `addf 1.1 2.2` is 3.3, not
/// 3.3000000000000003. Rounding to 15 significant digits gives the same.
fn decimal(f: f64) -> f64 {
    format!("{f:.14e}").parse().unwrap_or(f)
}

fn fold_f(name: &str, args: &[Value], f: fn(f64, f64) -> f64) -> Out {
    at_least(name, args, 1)?;
    let mut acc = to_f64(&args[0]);
    for v in &args[1..] {
        acc = f(acc, to_f64(v));
    }
    float(decimal(acc))
}

fn add1f(args: &[Value]) -> Out {
    arity("add1f", args, 1)?;
    float(decimal(to_f64(&args[0]) + 1.0))
}

fn addf(args: &[Value]) -> Out {
    float(decimal(args.iter().map(to_f64).sum()))
}

fn subf(args: &[Value]) -> Out {
    fold_f("subf", args, |a, b| a - b)
}

fn divf(args: &[Value]) -> Out {
    fold_f("divf", args, |a, b| a / b)
}

fn mulf(args: &[Value]) -> Out {
    fold_f("mulf", args, |a, b| a * b)
}

fn max(args: &[Value]) -> Out {
    at_least("max", args, 1)?;
    int(args.iter().map(to_i64).max().unwrap_or(0))
}

fn min(args: &[Value]) -> Out {
    at_least("min", args, 1)?;
    int(args.iter().map(to_i64).min().unwrap_or(0))
}

fn maxf(args: &[Value]) -> Out {
    fold_f("maxf", args, f64::max)
}

fn minf(args: &[Value]) -> Out {
    fold_f("minf", args, f64::min)
}

fn ceil(args: &[Value]) -> Out {
    arity("ceil", args, 1)?;
    float(to_f64(&args[0]).ceil())
}

fn floor(args: &[Value]) -> Out {
    arity("floor", args, 1)?;
    float(to_f64(&args[0]).floor())
}

/// `round VALUE PLACES [ROUND_ON]`: up when the fraction past the places is
/// at least ROUND_ON (default .5), as sprig compares it.
fn round(args: &[Value]) -> Out {
    at_least("round", args, 2)?;
    let (v, places) = (to_f64(&args[0]), to_i64(&args[1]));
    let on = args.get(2).map_or(0.5, to_f64);
    let pow = 10f64.powi(places.clamp(-300, 300) as i32);
    let digit = pow * v;
    let r = if digit.fract() >= on { digit.ceil() } else { digit.floor() };
    float(r / pow)
}

/// Go's `strconv.Atoi`; text that is no integer is 0.
fn atoi(args: &[Value]) -> Out {
    arity("atoi", args, 1)?;
    int(text("atoi", args, 0)?.parse().unwrap_or(0))
}

fn to_int(args: &[Value]) -> Out {
    arity("int", args, 1)?;
    int(to_i64(&args[0]))
}

fn to_float(args: &[Value]) -> Out {
    arity("float64", args, 1)?;
    float(to_f64(&args[0]))
}

/// Go's loop `for i := start; i < stop (or > stop); i += step`.
fn step_list(start: i64, stop: i64, step: i64) -> Vec<i64> {
    let mut out = Vec::new();
    let ok = |i: i64| if stop < start { i > stop } else { i < stop };
    if step == 0 || (stop < start && step >= 0) || (stop >= start && step <= 0) {
        return out;
    }
    let mut i = start;
    while ok(i) && out.len() < 1_000_000 {
        out.push(i);
        i += step;
    }
    out
}

fn ints(v: Vec<i64>) -> Out {
    super::charge("a list", v.len().saturating_mul(8))?;
    Ok(Value::Array(v.into_iter().map(Value::from).collect()))
}

/// Like Unix `seq`: `seq END`, `seq START END`, `seq START STEP END`, joined by spaces.
fn seq(args: &[Value]) -> Out {
    let p: Vec<i64> = args.iter().map(to_i64).collect();
    let list = match p.as_slice() {
        [end] => {
            let inc = if *end < 1 { -1 } else { 1 };
            step_list(1, end + inc, inc)
        }
        [start, end] => {
            let inc = if end < start { -1 } else { 1 };
            step_list(*start, end + inc, inc)
        }
        [start, step, end] => {
            let inc = if end < start { -1 } else { 1 };
            if end < start && *step > 0 {
                Vec::new()
            } else {
                step_list(*start, end + inc, *step)
            }
        }
        _ => Vec::new(),
    };
    string(list.iter().map(i64::to_string).collect::<Vec<_>>().join(" "))
}

fn until(args: &[Value]) -> Out {
    arity("until", args, 1)?;
    let n = to_i64(&args[0]);
    ints(step_list(0, n, if n < 0 { -1 } else { 1 }))
}

fn until_step(args: &[Value]) -> Out {
    arity("untilStep", args, 3)?;
    ints(step_list(to_i64(&args[0]), to_i64(&args[1]), to_i64(&args[2])))
}

fn to_strings(args: &[Value]) -> Out {
    arity("toStrings", args, 1)?;
    let list = match &args[0] {
        Value::Array(a) => a.iter().map(|v| Value::String(strval(v))).collect(),
        other => vec![Value::String(strval(other))],
    };
    Ok(Value::Array(list))
}

/// Octal text as its value (`"0777"` is 511); anything else 0.
fn to_decimal(args: &[Value]) -> Out {
    arity("toDecimal", args, 1)?;
    int(i64::from_str_radix(&strval(&args[0]), 8).unwrap_or(0))
}
