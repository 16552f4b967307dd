//! When two scalars are the same value, as the API server stores what helm applied: by
//! type and value, numbers by value, quantities by amount in the fields that hold
//! quantities, and what Go's YAML 1.1 reading makes of a plain scalar (`0644`, `yes`).

use serde_json::Value;

/// Path steps under which values are quantities (`resources.limits.cpu`, `spec.hard`,
/// `capacity.storage`), and fields that are one (`sizeLimit`).
const QUANTITY_PARENTS: &[&str] = &[
    "resources",
    "limits",
    "requests",
    "capacity",
    "hard",
    "allocatable",
    "overhead",
    "default",
    "defaultRequest",
    "max",
    "min",
    "maxLimitRequestRatio",
];
const QUANTITY_FIELDS: &[&str] = &["sizeLimit"];
/// Top-level fields whose values are never quantities, whatever their keys.
const NEVER_QUANTITIES: &[&str] = &["data", "stringData", "binaryData", "metadata"];

/// Whether the field at `path` holds a quantity.
pub(super) fn is_quantity_field(path: &str) -> bool {
    let steps: Vec<&str> = path
        .split(['.', '['])
        .map(|s| s.trim_end_matches(']'))
        .collect();
    let Some((last, above)) = steps.split_last() else {
        return false;
    };
    !NEVER_QUANTITIES.contains(&steps[0])
        && (QUANTITY_FIELDS.contains(last) || above.iter().any(|s| QUANTITY_PARENTS.contains(s)))
}

/// Whether `expected` (the manifest's value at `path`) and `live` are the same value.
pub(super) fn same_scalar_at(path: &str, expected: &Value, live: &Value) -> bool {
    if expected == live {
        return true;
    }
    match (expected, live) {
        (Value::Number(a), Value::Number(b)) => a.as_f64() == b.as_f64(),
        // A plain scalar Go's YAML 1.1 reads as a number or a boolean.
        (Value::String(text), Value::Number(n)) => {
            yaml11_int(text).is_some_and(|i| n.as_i64() == Some(i))
        }
        (Value::String(text), Value::Bool(b)) => yaml11_bool(text) == Some(*b),
        (Value::String(_) | Value::Number(_), Value::String(_)) if is_quantity_field(path) => {
            match (amount(expected), amount(live)) {
                (Some(a), Some(b)) => (a - b).abs() <= 1e-12 * a.abs().max(b.abs()).max(1.0),
                _ => false,
            }
        }
        _ => false,
    }
}

fn amount(value: &Value) -> Option<f64> {
    match value {
        Value::Number(n) => n.as_f64(),
        Value::String(s) => quantity(s),
        _ => None,
    }
}

/// An integer as Go's YAML 1.1 reads a plain scalar: `0644` octal, `0x1F`, `0o17`,
/// `0b101`, `1_000`, a sign.
fn yaml11_int(text: &str) -> Option<i64> {
    let plain = text.replace('_', "");
    let (negative, digits) = match plain.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, plain.strip_prefix('+').unwrap_or(&plain)),
    };
    let value = if let Some(hex) = digits.strip_prefix("0x") {
        i64::from_str_radix(hex, 16).ok()?
    } else if let Some(octal) = digits.strip_prefix("0o") {
        i64::from_str_radix(octal, 8).ok()?
    } else if let Some(binary) = digits.strip_prefix("0b") {
        i64::from_str_radix(binary, 2).ok()?
    } else if digits.len() > 1 && digits.starts_with('0') {
        i64::from_str_radix(&digits[1..], 8).ok()?
    } else {
        digits.parse().ok()?
    };
    Some(if negative { -value } else { value })
}

/// A boolean as Go's YAML 1.1 reads a plain scalar.
fn yaml11_bool(text: &str) -> Option<bool> {
    match text {
        "y" | "Y" | "yes" | "Yes" | "YES" | "on" | "On" | "ON" | "true" | "True" | "TRUE" => {
            Some(true)
        }
        "n" | "N" | "no" | "No" | "NO" | "off" | "Off" | "OFF" | "false" | "False" | "FALSE" => {
            Some(false)
        }
        _ => None,
    }
}

/// A Kubernetes quantity's amount: a decimal number, then a binary (`Ki`..`Ei`) or decimal
/// (`n`, `u`, `m`, `k`, `M`..`E`) suffix or an exponent (`1e3`).
fn quantity(text: &str) -> Option<f64> {
    let split = text
        .find(|c: char| !(c.is_ascii_digit() || c == '.' || c == '+' || c == '-'))
        .unwrap_or(text.len());
    let (number, suffix) = text.split_at(split);
    let number: f64 = number.parse().ok()?;
    let scale = match suffix {
        "" => 1.0,
        "Ki" => 1024f64,
        "Mi" => 1024f64.powi(2),
        "Gi" => 1024f64.powi(3),
        "Ti" => 1024f64.powi(4),
        "Pi" => 1024f64.powi(5),
        "Ei" => 1024f64.powi(6),
        "n" => 1e-9,
        "u" => 1e-6,
        "m" => 1e-3,
        "k" => 1e3,
        "M" => 1e6,
        "G" => 1e9,
        "T" => 1e12,
        "P" => 1e15,
        "E" => 1e18,
        exponent => 10f64.powi(exponent.strip_prefix(['e', 'E'])?.parse().ok()?),
    };
    Some(number * scale)
}
