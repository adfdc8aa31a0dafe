//! Resource quantities (`500m`, `2Gi`, `1e3`) as exact integers of milli-units, enough for the
//! scheduler's arithmetic.

/// Parses a Kubernetes quantity into thousandths of a unit, rounding up (as the scheduler's
/// `MilliValue` does).
pub fn parse_milli(text: &str) -> Result<i128, String> {
    let s = text.trim();
    let split = s.find(|c: char| !(c.is_ascii_digit() || matches!(c, '.' | '+' | '-'))).unwrap_or(s.len());
    let (number, suffix) = s.split_at(split);
    if number.is_empty() || number == "+" || number == "-" {
        return Err(format!("invalid quantity {text:?}"));
    }
    let negative = number.starts_with('-');
    let digits = number.trim_start_matches(['+', '-']);
    let (whole, frac) = digits.split_once('.').unwrap_or((digits, ""));
    if !(whole.chars().all(|c| c.is_ascii_digit()) && frac.chars().all(|c| c.is_ascii_digit())) {
        return Err(format!("invalid quantity {text:?}"));
    }
    // The value as an integer mantissa times 10^-scale.
    let mantissa: i128 = format!("{whole}{frac}").parse().map_err(|_| format!("invalid quantity {text:?}"))?;
    let scale = frac.len() as i32;
    let (base10_exp, multiplier): (i32, i128) = match suffix {
        "" => (0, 1),
        "n" => (-9, 1),
        "u" => (-6, 1),
        "m" => (-3, 1),
        "k" => (3, 1),
        "M" => (6, 1),
        "G" => (9, 1),
        "T" => (12, 1),
        "P" => (15, 1),
        "E" => (18, 1),
        "Ki" => (0, 1 << 10),
        "Mi" => (0, 1 << 20),
        "Gi" => (0, 1 << 30),
        "Ti" => (0, 1 << 40),
        "Pi" => (0, 1 << 50),
        "Ei" => (0, 1 << 60),
        e if e.starts_with(['e', 'E']) => {
            (e[1..].parse::<i32>().map_err(|_| format!("invalid quantity {text:?}: bad exponent"))?, 1)
        }
        other => return Err(format!("invalid quantity {text:?}: unknown suffix {other:?}")),
    };
    // milli = mantissa * multiplier * 10^(base10_exp + 3 - scale), rounded up.
    let exp = base10_exp + 3 - scale;
    let value = mantissa.checked_mul(multiplier).ok_or_else(|| format!("quantity {text:?} is too large"))?;
    let milli = if exp >= 0 {
        10i128
            .checked_pow(exp as u32)
            .and_then(|p| value.checked_mul(p))
            .ok_or_else(|| format!("quantity {text:?} is too large"))?
    } else {
        let div = 10i128.checked_pow((-exp) as u32).unwrap_or(i128::MAX);
        (value + div - 1) / div
    };
    Ok(if negative { -milli } else { milli })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantities() {
        assert_eq!(parse_milli("1"), Ok(1000));
        assert_eq!(parse_milli("500m"), Ok(500));
        assert_eq!(parse_milli("0.5"), Ok(500));
        assert_eq!(parse_milli("2Gi"), Ok(2 * (1 << 30) * 1000));
        assert_eq!(parse_milli("1k"), Ok(1_000_000));
        assert_eq!(parse_milli("1e3"), Ok(1_000_000));
        assert_eq!(parse_milli("1n"), Ok(1));
        assert!(parse_milli("1Zi").is_err());
        assert!(parse_milli("abc").is_err());
    }
}
