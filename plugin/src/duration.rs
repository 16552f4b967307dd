//! Durations as kubectl writes them (`90s`, `5m`, `1h30m`, `500ms`), and ages as kubectl
//! prints them (`45s`, `12m`, `3h`, `9d`).

use std::time::Duration;

/// Parses a Go-style duration: a sequence of `<number><unit>` with units h, m, s, ms.
/// A bare number is seconds.
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    let text = text.trim();
    if text.is_empty() {
        return Err("a duration is empty: write it like 90s, 5m or 1h30m".to_owned());
    }
    if let Ok(seconds) = text.parse::<u64>() {
        return Ok(Duration::from_secs(seconds));
    }
    let mut total = Duration::ZERO;
    let mut rest = text;
    while !rest.is_empty() {
        let digits = rest
            .find(|c: char| !c.is_ascii_digit())
            .unwrap_or(rest.len());
        if digits == 0 {
            return Err(format!(
                "{text:?} is not a duration: write it like 90s, 5m or 1h30m"
            ));
        }
        let number: u64 = rest[..digits]
            .parse()
            .map_err(|_| format!("{text:?} is too large a duration"))?;
        rest = &rest[digits..];
        let unit_len = rest
            .find(|c: char| c.is_ascii_digit())
            .unwrap_or(rest.len());
        let unit = match &rest[..unit_len] {
            "h" => Duration::from_secs(3600),
            "m" => Duration::from_secs(60),
            "s" => Duration::from_secs(1),
            "ms" => Duration::from_millis(1),
            other => {
                return Err(format!(
                    "{text:?} has an unknown unit {other:?}: use h, m, s or ms"
                ));
            }
        };
        rest = &rest[unit_len..];
        total += unit
            .checked_mul(u32::try_from(number).map_err(|_| format!("{text:?} is too large"))?)
            .ok_or_else(|| format!("{text:?} is too large a duration"))?;
    }
    Ok(total)
}

/// A duration the way kubectl prints it in tables: the largest unit, rounded down,
/// with a second unit while the first is small (`1m30s`, `2h5m`).
pub fn human(duration: Duration) -> String {
    let seconds = duration.as_secs();
    match seconds {
        0..120 => format!("{seconds}s"),
        120..600 if !seconds.is_multiple_of(60) => {
            format!("{}m{}s", seconds / 60, seconds % 60)
        }
        120..3600 => format!("{}m", seconds / 60),
        3600..28_800 if (seconds % 3600) / 60 != 0 => {
            format!("{}h{}m", seconds / 3600, (seconds % 3600) / 60)
        }
        3600..172_800 => format!("{}h", seconds / 3600),
        _ => format!("{}d", seconds / 86_400),
    }
}

/// A timeout for messages: `5m0s` style like kubectl, but without a zero tail.
pub fn timeout_text(duration: Duration) -> String {
    let seconds = duration.as_secs();
    let (hours, minutes, seconds_left) = (seconds / 3600, (seconds % 3600) / 60, seconds % 60);
    let mut out = String::new();
    if hours > 0 {
        out.push_str(&format!("{hours}h"));
    }
    if minutes > 0 {
        out.push_str(&format!("{minutes}m"));
    }
    if seconds_left > 0 || out.is_empty() {
        if out.is_empty() && duration.subsec_millis() > 0 && seconds == 0 {
            return format!("{}ms", duration.subsec_millis());
        }
        out.push_str(&format!("{seconds_left}s"));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_parse_like_kubectl() {
        for (text, secs) in [
            ("90", 90),
            ("90s", 90),
            ("5m", 300),
            ("1h30m", 5400),
            ("2h0m5s", 7205),
        ] {
            assert_eq!(
                parse_duration(text),
                Ok(Duration::from_secs(secs)),
                "{text}"
            );
        }
        assert_eq!(parse_duration("250ms"), Ok(Duration::from_millis(250)));
    }

    #[test]
    fn bad_durations_say_how_to_write_one() {
        for text in ["", "m5", "5x", "1.5m", "-3s"] {
            let error = parse_duration(text).unwrap_err();
            assert!(
                error.contains("duration") || error.contains("unit"),
                "{text}: {error}"
            );
        }
    }

    #[test]
    fn ages_read_like_kubectl() {
        for (secs, text) in [
            (0, "0s"),
            (119, "119s"),
            (150, "2m30s"),
            (600, "10m"),
            (3599, "59m"),
            (3600, "1h"),
            (5400, "1h30m"),
            (30_000, "8h"),
            (200_000, "2d"),
        ] {
            assert_eq!(human(Duration::from_secs(secs)), text, "{secs}");
        }
    }

    #[test]
    fn timeouts_read_naturally() {
        assert_eq!(timeout_text(Duration::from_secs(300)), "5m");
        assert_eq!(timeout_text(Duration::from_secs(90)), "1m30s");
        assert_eq!(timeout_text(Duration::from_secs(3600)), "1h");
        assert_eq!(timeout_text(Duration::from_millis(200)), "200ms");
    }
}
