//! Just enough of Kubernetes' `resource.Quantity` for the controllers' arithmetic: parse, add,
//! multiply by a count, compare, and print in the canonical form Go prints (`1500m`, `3Gi`, `2k`).

use std::fmt;

/// How a quantity prints: binary (`Ki`, `Mi`, ...) or decimal SI (`m`, `k`, `M`, ...).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Format {
    BinarySI,
    DecimalSI,
}

/// A resource quantity, held exactly in nano-units. Equality and order are by value.
#[derive(Debug, Clone, Copy)]
pub struct Quantity {
    nanos: i128,
    format: Format,
}

const NANO: i128 = 1_000_000_000;

impl Quantity {
    /// Zero, printed `0`.
    pub const ZERO: Quantity = Quantity { nanos: 0, format: Format::DecimalSI };

    /// Parses `"500m"`, `"2"`, `"1.5Gi"`, `"1e3"`; `None` if it is not a quantity.
    pub fn parse(s: &str) -> Option<Quantity> {
        let s = s.trim();
        let split = s.find(|c: char| !(c.is_ascii_digit() || c == '.' || c == '+' || c == '-')).unwrap_or(s.len());
        let (num, suffix) = s.split_at(split);
        if num.is_empty() || num == "+" || num == "-" {
            return None;
        }
        let (negative, digits) = match num.as_bytes()[0] {
            b'-' => (true, &num[1..]),
            b'+' => (false, &num[1..]),
            _ => (false, num),
        };
        let (int_part, frac_part) = digits.split_once('.').unwrap_or((digits, ""));
        if int_part.contains(['+', '-']) || frac_part.contains(['+', '-', '.']) {
            return None;
        }
        if int_part.is_empty() && frac_part.is_empty() {
            return None;
        }
        // The suffix as a power of ten and a power of two of the unit.
        let (pow10, pow2, format) = match suffix {
            "" => (0, 0, Format::DecimalSI),
            "n" => (-9, 0, Format::DecimalSI),
            "u" => (-6, 0, Format::DecimalSI),
            "m" => (-3, 0, Format::DecimalSI),
            "k" => (3, 0, Format::DecimalSI),
            "M" => (6, 0, Format::DecimalSI),
            "G" => (9, 0, Format::DecimalSI),
            "T" => (12, 0, Format::DecimalSI),
            "P" => (15, 0, Format::DecimalSI),
            "E" => (18, 0, Format::DecimalSI),
            "Ki" => (0, 10, Format::BinarySI),
            "Mi" => (0, 20, Format::BinarySI),
            "Gi" => (0, 30, Format::BinarySI),
            "Ti" => (0, 40, Format::BinarySI),
            "Pi" => (0, 50, Format::BinarySI),
            "Ei" => (0, 60, Format::BinarySI),
            e if e.starts_with(['e', 'E']) => (e[1..].parse().ok()?, 0, Format::DecimalSI),
            _ => return None,
        };
        let scaled = nanos_rounded_up(int_part, frac_part, pow10, pow2)?;
        Some(Quantity { nanos: if negative { -scaled } else { scaled }, format })
    }

    /// The sum; keeps the format of `self` unless `self` is zero (Go's `Add` on an empty quantity).
    pub fn plus(self, other: Quantity) -> Quantity {
        let format = if self.nanos == 0 { other.format } else { self.format };
        Quantity { nanos: self.nanos.saturating_add(other.nanos), format }
    }

    /// `self` times `n`.
    pub fn times(self, n: i64) -> Quantity {
        Quantity { nanos: self.nanos.saturating_mul(i128::from(n)), format: self.format }
    }

    /// The exact value in nano-units (`1` is 1_000_000_000, `1m` is 1_000_000).
    pub fn as_nanos(&self) -> i128 {
        self.nanos
    }

    /// The value in thousandths of a unit, rounded up (Go's `MilliValue`, what the scheduler
    /// compares).
    pub fn milli_value(&self) -> i128 {
        let (q, r) = (self.nanos / 1_000_000, self.nanos % 1_000_000);
        if r > 0 { q + 1 } else { q }
    }

    /// Whether it is zero.
    pub fn is_zero(&self) -> bool {
        self.nanos == 0
    }
}

/// `int.frac × 10^pow10 × 2^pow2` in whole nano-units, a fraction of a nano rounded up (Go's
/// `ParseQuantity` rounds with `inf.RoundUp` at nano scale, so any amount asked for is some
/// amount), worked on the digits so that a long mantissa whose value fits does not overflow;
/// `None` when the value does not fit.
fn nanos_rounded_up(int_part: &str, frac_part: &str, pow10: i32, pow2: u32) -> Option<i128> {
    let frac = frac_part.trim_end_matches('0');
    let joined = format!("{int_part}{frac}");
    let digits = joined.trim_start_matches('0');
    if digits.is_empty() {
        return Some(0);
    }
    let factor2 = 2i128.checked_pow(pow2)?;
    // The value is digits × 2^pow2 × 10^exp nanos.
    let exp = i64::from(pow10) + 9 - frac.len() as i64;
    if exp >= 0 {
        let ten = 10i128.checked_pow(u32::try_from(exp).ok()?)?;
        return digits.parse::<i128>().ok()?.checked_mul(factor2)?.checked_mul(ten);
    }
    let places = usize::try_from(-exp).ok()?;
    if pow2 == 0 {
        // Divide by 10^places on the digits: the quotient is the leading digits, and any
        // non-zero digit after them rounds up.
        let (quotient, rest) = digits.split_at(digits.len().saturating_sub(places));
        let q: i128 = if quotient.is_empty() { 0 } else { quotient.parse().ok()? };
        return q.checked_add(i128::from(rest.bytes().any(|b| b != b'0')));
    }
    let n = digits.parse::<i128>().ok()?.checked_mul(factor2)?;
    let d = 10i128.checked_pow(u32::try_from(places).ok()?)?;
    Some(n / d + i128::from(n % d != 0))
}

/// Go's `ErrFormatWrong`.
pub const ERR_FORMAT_WRONG: &str =
    "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'";
/// Go's `ErrSuffix`.
pub const ERR_SUFFIX: &str = "unable to parse quantity's suffix";

/// Why Go's `resource.ParseQuantity` refuses `text` (`None` when it takes it), by the syntax of
/// `parseQuantityString` and the suffixes `quantitySuffixer` knows (apimachinery v0.37.2
/// pkg/api/resource/quantity.go). Magnitude is not judged: Go keeps any size.
pub fn go_parse_error(text: &str) -> Option<&'static str> {
    let b = text.as_bytes();
    if b.is_empty() {
        return Some(ERR_FORMAT_WRONG);
    }
    let mut pos = usize::from(matches!(b[0], b'-' | b'+'));
    let digits = |mut i: usize| {
        while i < b.len() && b[i].is_ascii_digit() {
            i += 1;
        }
        i
    };
    pos = digits(pos);
    if pos < b.len() && b[pos] == b'.' {
        pos = digits(pos + 1);
    }
    // No digits at all is zero in Go (the numerator defaults to "0"); what follows must be a
    // suffix: letters, then an optional signed number.
    let suffix_start = pos;
    while pos < b.len() && b"eEinumkKMGTP".contains(&b[pos]) {
        pos += 1;
    }
    if pos < b.len() {
        if matches!(b[pos], b'-' | b'+') {
            pos += 1;
        }
        pos = digits(pos);
        if pos < b.len() {
            return Some(ERR_FORMAT_WRONG);
        }
    }
    let suffix = &text[suffix_start..];
    let known = matches!(
        suffix,
        "" | "n" | "u" | "m" | "k" | "M" | "G" | "T" | "P" | "E" | "Ki" | "Mi" | "Gi" | "Ti" | "Pi" | "Ei"
    );
    // `e<int>` / `E<int>`: strconv.ParseInt of the rest (a sign allowed).
    let exponent = suffix.len() > 1 && suffix.starts_with(['e', 'E']) && suffix[1..].parse::<i64>().is_ok();
    if known || exponent { None } else { Some(ERR_SUFFIX) }
}

/// A string that is not a quantity.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid quantity {text:?}")]
pub struct InvalidQuantity {
    /// The string as given.
    pub text: String,
}

/// Parses a quantity into thousandths of a unit, rounded up.
pub fn parse_milli(text: &str) -> Result<i128, InvalidQuantity> {
    Quantity::parse(text).map(|q| q.milli_value()).ok_or_else(|| InvalidQuantity { text: text.to_string() })
}

/// What Go writes back for a quantity it read (`ParseQuantity`, then `String`): the canonical
/// form, a magnitude above 2^63 - 1 capped there (`maxAllowed`), and, for the values of a v1
/// `ResourceList`, rounded up to milli-units first (`SetDefaults_ResourceList`). `None` when Go
/// does not read `text` as a quantity, and for the exponent form (`1e3`), which Go keeps and
/// this type does not model.
pub fn go_round_trip(text: &str, round_up_milli: bool) -> Option<String> {
    let t = text.trim();
    let suffix = &t[t.find(|c: char| !(c.is_ascii_digit() || c == '.' || c == '+' || c == '-')).unwrap_or(t.len())..];
    let exponent = suffix.len() > 1 && suffix.starts_with(['e', 'E']) && suffix != "Ei";
    if go_parse_error(text).is_some() || exponent {
        return None;
    }
    const MAX_NANOS: i128 = i64::MAX as i128 * NANO;
    let mut q = match Quantity::parse(text) {
        Some(q) if q.nanos <= MAX_NANOS => q,
        // Too large for the nano-units here, or above the cap: Go caps positive amounts.
        Some(q) if q.nanos > 0 => return Some(i64::MAX.to_string()),
        None if !text.trim_start().starts_with('-') => return Some(i64::MAX.to_string()),
        _ => return None,
    };
    if round_up_milli {
        // inf.RoundUp rounds away from zero.
        let r = q.nanos % 1_000_000;
        if r != 0 {
            q.nanos += if q.nanos > 0 { 1_000_000 - r } else { -1_000_000 - r };
        }
    }
    Some(q.to_string())
}

impl fmt::Display for Quantity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let v = self.nanos;
        if v == 0 {
            return f.write_str("0");
        }
        // Go prints small or fractional binary quantities in decimal SI.
        let binary = self.format == Format::BinarySI && v % NANO == 0 && v.abs() >= 1024 * NANO;
        if binary {
            let mut units = v / NANO;
            let mut i = 0;
            while i < 6 && units % 1024 == 0 {
                units /= 1024;
                i += 1;
            }
            let suffix = ["", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"][i];
            return write!(f, "{units}{suffix}");
        }
        // Decimal SI: the largest exponent (a multiple of 3) that keeps the mantissa whole.
        let mut mantissa = v;
        let mut exp = -9i32;
        while exp < 18 && mantissa % 1000 == 0 {
            mantissa /= 1000;
            exp += 3;
        }
        let suffix = match exp {
            -9 => "n",
            -6 => "u",
            -3 => "m",
            0 => "",
            3 => "k",
            6 => "M",
            9 => "G",
            12 => "T",
            15 => "P",
            _ => "E",
        };
        write!(f, "{mantissa}{suffix}")
    }
}

impl PartialEq for Quantity {
    fn eq(&self, other: &Self) -> bool {
        self.nanos == other.nanos
    }
}

impl Eq for Quantity {}

impl PartialOrd for Quantity {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Quantity {
    /// By value; the print format does not take part.
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.nanos.cmp(&other.nanos)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn go_refuses_what_parse_quantity_string_refuses() {
        for ok in ["1", "-1", "+1", "1e3", "1E", "0.5", "1.", ".5", "1Ki", "9999999999999999999999Ei", "100m", "1e-3"] {
            assert_eq!(go_parse_error(ok), None, "{ok}");
        }
        for bad in ["", "1.5.5", "1 Mi", "1KB", "abc"] {
            assert_eq!(go_parse_error(bad), Some(ERR_FORMAT_WRONG), "{bad}");
        }
        assert_eq!(go_parse_error("1mm"), Some(ERR_SUFFIX));
        assert_eq!(go_parse_error("1iK"), Some(ERR_SUFFIX));
        assert_eq!(go_parse_error("1Ki2"), Some(ERR_SUFFIX));
    }
    use rstest::rstest;

    fn q(s: &str) -> Quantity {
        Quantity::parse(s).unwrap_or_else(|| panic!("{s} parses"))
    }

    #[rstest]
    #[case("1", "1")]
    #[case("500m", "500m")]
    #[case("0.5", "500m")]
    #[case("1500m", "1500m")]
    #[case("2000", "2k")]
    #[case("1500", "1500")]
    #[case("1Gi", "1Gi")]
    #[case("1024Mi", "1Gi")]
    #[case("1.5Gi", "1536Mi")]
    #[case("512", "512")]
    #[case("1G", "1G")]
    #[case("1e3", "1k")]
    #[case("0", "0")]
    fn canonical_forms_match_go(#[case] input: &str, #[case] printed: &str) {
        assert_eq!(q(input).to_string(), printed);
    }

    #[test]
    fn go_writes_back_canonical_capped_and_milli_rounded_quantities() {
        assert_eq!(go_round_trip("1000m", false).as_deref(), Some("1"));
        assert_eq!(go_round_trip("0.0001", false).as_deref(), Some("100u"));
        assert_eq!(go_round_trip("0.0001", true).as_deref(), Some("1m"));
        assert_eq!(go_round_trip("9999999999999999999999Ei", true).as_deref(), Some("9223372036854775807"));
        assert_eq!(go_round_trip("1e3", false), None);
        assert_eq!(go_round_trip("1..2", false), None);
    }

    #[test]
    fn sums_and_products() {
        assert_eq!(q("1").plus(q("500m")).to_string(), "1500m");
        assert_eq!(q("2Gi").times(3).plus(q("1Gi")).to_string(), "7Gi");
        assert_eq!(Quantity::ZERO.plus(q("4Gi")).to_string(), "4Gi");
        assert_eq!(q("1").times(0).to_string(), "0");
    }

    #[test]
    fn milli_values_round_up() {
        assert_eq!(parse_milli("1"), Ok(1000));
        assert_eq!(parse_milli("500m"), Ok(500));
        assert_eq!(parse_milli("0.5"), Ok(500));
        assert_eq!(parse_milli("2Gi"), Ok(2 * (1 << 30) * 1000));
        assert_eq!(parse_milli("1k"), Ok(1_000_000));
        assert_eq!(parse_milli("1e3"), Ok(1_000_000));
        assert_eq!(parse_milli("1n"), Ok(1));
        assert_eq!(parse_milli("1Zi").unwrap_err().to_string(), "invalid quantity \"1Zi\"");
        assert_eq!(parse_milli("abc").unwrap_err(), InvalidQuantity { text: "abc".into() });
    }

    /// Found by the `quantity` fuzz target: a value whose nanos fit, written with a mantissa
    /// whose nanos would not before the suffix divides them, read back.
    #[test]
    fn a_long_mantissa_with_a_small_suffix_reads_back() {
        let big = q("92203685477589072237203.332453614");
        assert_eq!(big.to_string(), "92203685477589072237203332453614n");
        assert_eq!(q(&big.to_string()).as_nanos(), big.as_nanos());
        let many_nanos = q("1000000000000000000000000000000000000n");
        assert_eq!(many_nanos.as_nanos(), 10i128.pow(36));
        assert_eq!(q(&many_nanos.to_string()).as_nanos(), 10i128.pow(36));
        // Beyond what the nano-units hold: not a quantity here (Go's inf.Dec would take it).
        assert_eq!(Quantity::parse("1000000000000000000000000000000000000000000n"), None);
    }

    /// Go rounds a fraction of a nano up, in magnitude: `0.1n` is `1n`, `-0.1n` is `-1n`.
    #[rstest]
    #[case("0.1n", 1)]
    #[case("-0.1n", -1)]
    #[case("1.0000000001", 1_000_000_001)]
    #[case("0.000000000", 0)]
    #[case("1.5e-9", 2)]
    #[case("0.0000000015Ki", 1536)]
    #[case("0.0000000000001Ki", 1)]
    fn fractions_of_a_nano_round_up(#[case] input: &str, #[case] nanos: i128) {
        assert_eq!(q(input).as_nanos(), nanos);
    }

    #[rstest]
    fn rejects_what_is_not_a_quantity(#[values("", "abc", "1x", "--1", "1.2.3", "Gi")] bad: &str) {
        assert_eq!(Quantity::parse(bad), None);
    }
}
