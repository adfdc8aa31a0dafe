//! Go's `time.Duration` in text: `time.ParseDuration` (`1.5s`, `1h2m`, `300ms`, `-1.5h`, `0`)
//! and `Duration.String` (`1h2m0s`, `1.5s`, `300ms`). Kubernetes objects, kubelet settings
//! and suite files write durations this way, so every reader of one uses this grammar.

use std::fmt;

/// A signed duration in nanoseconds, Go's `time.Duration`: the range is ±292 years.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct GoDuration(i64);

/// Why a string is not a Go duration. The messages are Go's, word for word.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DurationError {
    /// Not of the form `[-+]?([0-9]*(\.[0-9]*)?[a-z]+)+`, or out of range.
    #[error("time: invalid duration {}", time_quote(.text))]
    Invalid {
        /// The string as given.
        text: String,
    },
    /// A number without a unit (`3`).
    #[error("time: missing unit in duration {}", time_quote(.text))]
    MissingUnit {
        /// The string as given.
        text: String,
    },
    /// A unit other than `ns`, `us`, `µs`, `μs`, `ms`, `s`, `m`, `h` (`1d`).
    #[error("time: unknown unit {} in duration {}", time_quote(.unit), time_quote(.text))]
    UnknownUnit {
        /// The unit found.
        unit: String,
        /// The string as given.
        text: String,
    },
}

/// A negative [`GoDuration`] has no `std::time::Duration`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("negative duration {0}")]
pub struct NegativeDuration(pub GoDuration);

const NANOSECOND: u64 = 1;
const MICROSECOND: u64 = 1_000 * NANOSECOND;
const MILLISECOND: u64 = 1_000 * MICROSECOND;
const SECOND: u64 = 1_000 * MILLISECOND;
const MINUTE: u64 = 60 * SECOND;
const HOUR: u64 = 60 * MINUTE;
/// 2^63: one more than the largest positive duration, the magnitude of the smallest negative one.
const LIMIT: u64 = 1 << 63;

impl GoDuration {
    /// Zero.
    pub const ZERO: GoDuration = GoDuration(0);

    /// The duration of `nanos` nanoseconds.
    pub const fn from_nanos(nanos: i64) -> Self {
        GoDuration(nanos)
    }

    /// The length in nanoseconds, negative for negative durations.
    pub const fn as_nanos(self) -> i64 {
        self.0
    }

    /// Whether it is below zero.
    pub const fn is_negative(self) -> bool {
        self.0 < 0
    }
}

impl From<std::time::Duration> for GoDuration {
    /// Saturates at Go's largest duration (about 292 years).
    fn from(d: std::time::Duration) -> Self {
        GoDuration(i64::try_from(d.as_nanos()).unwrap_or(i64::MAX))
    }
}

impl TryFrom<GoDuration> for std::time::Duration {
    type Error = NegativeDuration;

    fn try_from(d: GoDuration) -> Result<Self, Self::Error> {
        u64::try_from(d.0).map(std::time::Duration::from_nanos).map_err(|_| NegativeDuration(d))
    }
}

impl From<GoDuration> for jiff::SignedDuration {
    fn from(d: GoDuration) -> Self {
        jiff::SignedDuration::from_nanos(d.0)
    }
}

impl std::str::FromStr for GoDuration {
    type Err = DurationError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        parse_go_duration(s)
    }
}

impl fmt::Display for GoDuration {
    /// Go's `Duration.String`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&format_go_duration(*self))
    }
}

/// A non-negative duration written as Go writes one (`30s`, `1m30s`, `1.5s`, `500ms`): how
/// settings and suite tables give delays and timeouts. Reads with [`parse_go_duration`],
/// writes with [`format_go_duration`]; a negative duration is refused when read.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct DurationText(pub std::time::Duration);

impl DurationText {
    /// Parses Go's syntax, refusing negative durations.
    pub fn parse(text: &str) -> Result<Self, String> {
        let d = parse_go_duration(text.trim()).map_err(|e| e.to_string())?;
        std::time::Duration::try_from(d).map(DurationText).map_err(|e| format!("time: {e} in {text:?}"))
    }
}

impl fmt::Display for DurationText {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&format_go_duration(self.0))
    }
}

impl serde::Serialize for DurationText {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> serde::Deserialize<'de> for DurationText {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        DurationText::parse(&text).map_err(serde::de::Error::custom)
    }
}

impl schemars::JsonSchema for DurationText {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "DurationText".into()
    }
    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "type": "string",
            "description": "A duration as Go writes one: 30s, 1m30s, 1.5s, 500ms, 2h",
            "pattern": "^(0|([0-9]*(\\.[0-9]*)?(ns|us|µs|μs|ms|s|m|h))+)$"
        })
    }
}

/// Go's `time.ParseDuration`: an optional sign, then one or more decimal numbers, each with an
/// optional fraction and a unit (`ns`, `us` or `µs`, `ms`, `s`, `m`, `h`); `0` alone needs no
/// unit. Fractions are exact to the nanosecond as in Go (which rounds down).
pub fn parse_go_duration(text: &str) -> Result<GoDuration, DurationError> {
    let invalid = || DurationError::Invalid { text: text.to_string() };
    let mut s = text.as_bytes();
    let mut negative = false;
    if let Some((&sign @ (b'-' | b'+'), rest)) = s.split_first() {
        negative = sign == b'-';
        s = rest;
    }
    if s == b"0" {
        return Ok(GoDuration::ZERO);
    }
    if s.is_empty() {
        return Err(invalid());
    }
    let mut total: u64 = 0;
    while !s.is_empty() {
        if !(s[0] == b'.' || s[0].is_ascii_digit()) {
            return Err(invalid());
        }
        let before = s.len();
        let (whole, rest) = leading_int(s).ok_or_else(invalid)?;
        s = rest;
        let had_whole = s.len() != before;
        let (mut fraction, mut scale, mut had_fraction) = (0u64, 1f64, false);
        if let Some((b'.', rest)) = s.split_first() {
            let before = rest.len();
            (fraction, scale, s) = leading_fraction(rest);
            had_fraction = s.len() != before;
        }
        if !had_whole && !had_fraction {
            return Err(invalid());
        }
        let unit_len = s.iter().position(|c| *c == b'.' || c.is_ascii_digit()).unwrap_or(s.len());
        if unit_len == 0 {
            return Err(DurationError::MissingUnit { text: text.to_string() });
        }
        let (unit, rest) = s.split_at(unit_len);
        s = rest;
        let unit_nanos = match unit {
            b"ns" => NANOSECOND,
            // `us`, `µs` (U+00B5 micro sign) and `μs` (U+03BC Greek mu).
            b"us" | b"\xc2\xb5s" | b"\xce\xbcs" => MICROSECOND,
            b"ms" => MILLISECOND,
            b"s" => SECOND,
            b"m" => MINUTE,
            b"h" => HOUR,
            _ => {
                let unit = String::from_utf8_lossy(unit).into_owned();
                return Err(DurationError::UnknownUnit { unit, text: text.to_string() });
            }
        };
        if whole > LIMIT / unit_nanos {
            return Err(invalid());
        }
        let mut value = whole * unit_nanos;
        if fraction > 0 {
            // As Go: float64 keeps fractions of an hour exact to the nanosecond.
            value += (fraction as f64 * (unit_nanos as f64 / scale)) as u64;
            if value > LIMIT {
                return Err(invalid());
            }
        }
        total = total.checked_add(value).filter(|t| *t <= LIMIT).ok_or_else(invalid)?;
    }
    if negative {
        // `total` is at most 2^63, whose negation is i64::MIN.
        return Ok(GoDuration((total as i128).wrapping_neg() as i64));
    }
    i64::try_from(total).map(GoDuration).map_err(|_| invalid())
}

/// The leading `[0-9]*` as a number; `None` when it overflows 2^63.
fn leading_int(s: &[u8]) -> Option<(u64, &[u8])> {
    let digits = s.iter().take_while(|c| c.is_ascii_digit()).count();
    let mut x: u64 = 0;
    for &c in &s[..digits] {
        if x > LIMIT / 10 {
            return None;
        }
        x = x * 10 + u64::from(c - b'0');
        if x > LIMIT {
            return None;
        }
    }
    Some((x, &s[digits..]))
}

/// The leading `[0-9]*` of a fraction as (digits, 10^digits); digits past what fits are
/// dropped rather than an error, as in Go.
fn leading_fraction(s: &[u8]) -> (u64, f64, &[u8]) {
    let digits = s.iter().take_while(|c| c.is_ascii_digit()).count();
    let (mut x, mut scale, mut overflow) = (0u64, 1f64, false);
    for &c in &s[..digits] {
        if overflow {
            continue;
        }
        if x > (LIMIT - 1) / 10 {
            overflow = true;
            continue;
        }
        let y = x * 10 + u64::from(c - b'0');
        if y > LIMIT {
            overflow = true;
            continue;
        }
        x = y;
        scale *= 10.0;
    }
    (x, scale, &s[digits..])
}

/// Go's `Duration.String`: `72h3m0.5s`, with `ms`, `µs` or `ns` below a second, `0s` for zero.
pub fn format_go_duration(d: impl Into<GoDuration>) -> String {
    let d = d.into().0;
    let mut u = d.unsigned_abs();
    let mut out: Vec<u8> = Vec::with_capacity(32);
    // Built from the end, like Go's buffer, then reversed.
    if u < SECOND {
        let precision = match u {
            0 => return "0s".to_string(),
            u if u < MICROSECOND => {
                out.extend_from_slice(b"sn");
                0
            }
            u if u < MILLISECOND => {
                out.extend("µs".bytes().rev());
                3
            }
            _ => {
                out.extend_from_slice(b"sm");
                6
            }
        };
        u = push_fraction(&mut out, u, precision);
        push_int(&mut out, u);
    } else {
        out.push(b's');
        u = push_fraction(&mut out, u, 9);
        push_int(&mut out, u % 60);
        u /= 60;
        if u > 0 {
            out.push(b'm');
            push_int(&mut out, u % 60);
            u /= 60;
            // Hours are the largest unit: days differ in length.
            if u > 0 {
                out.push(b'h');
                push_int(&mut out, u);
            }
        }
    }
    if d < 0 {
        out.push(b'-');
    }
    out.reverse();
    String::from_utf8(out).unwrap_or_default()
}

/// Pushes (reversed) the fraction `v / 10^precision` without trailing zeros, and the point
/// unless the fraction is zero; returns the whole part.
fn push_fraction(out: &mut Vec<u8>, mut v: u64, precision: usize) -> u64 {
    let mut printing = false;
    for _ in 0..precision {
        let digit = (v % 10) as u8;
        printing |= digit != 0;
        if printing {
            out.push(b'0' + digit);
        }
        v /= 10;
    }
    if printing {
        out.push(b'.');
    }
    v
}

/// Pushes (reversed) the decimal digits of `v`.
fn push_int(out: &mut Vec<u8>, mut v: u64) {
    loop {
        out.push(b'0' + (v % 10) as u8);
        v /= 10;
        if v == 0 {
            return;
        }
    }
}

/// The `time` package's own quoting in its errors: like `strconv.Quote` for printable ASCII,
/// with every byte of anything else as `\x..`.
fn time_quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        if c.is_ascii() && !c.is_ascii_control() {
            if c == '"' || c == '\\' {
                out.push('\\');
            }
            out.push(c);
        } else {
            let mut buf = [0u8; 4];
            for b in c.encode_utf8(&mut buf).bytes() {
                out.push_str(&format!("\\x{b:02x}"));
            }
        }
    }
    out.push('"');
    out
}

#[cfg(test)]
mod text_tests {
    use super::*;

    #[test]
    fn duration_text_reads_go_syntax_and_refuses_negatives() {
        let d: DurationText = serde_json::from_str("\"1.5s\"").expect("parses");
        assert_eq!(d.0, std::time::Duration::from_millis(1500));
        assert_eq!(serde_json::to_string(&d).expect("writes"), "\"1.5s\"");
        let err = serde_json::from_str::<DurationText>("\"-1s\"").unwrap_err().to_string();
        assert!(err.contains("negative duration -1s"), "{err}");
        let err = serde_json::from_str::<DurationText>("\"3d\"").unwrap_err().to_string();
        assert!(err.contains("time: unknown unit \"d\" in duration \"3d\""), "{err}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    const NS: i64 = 1;
    const US: i64 = 1_000;
    const MS: i64 = 1_000_000;
    const S: i64 = 1_000_000_000;
    const M: i64 = 60 * S;
    const H: i64 = 60 * M;

    /// Go's `parseDurationTests`.
    #[rstest]
    #[case("0", 0)]
    #[case("5s", 5 * S)]
    #[case("30s", 30 * S)]
    #[case("1478s", 1478 * S)]
    #[case("-5s", -5 * S)]
    #[case("+5s", 5 * S)]
    #[case("-0", 0)]
    #[case("+0", 0)]
    #[case("5.0s", 5 * S)]
    #[case("5.6s", 5 * S + 600 * MS)]
    #[case("5.s", 5 * S)]
    #[case(".5s", 500 * MS)]
    #[case("1.0s", S)]
    #[case("1.00s", S)]
    #[case("1.004s", S + 4 * MS)]
    #[case("1.0040s", S + 4 * MS)]
    #[case("100.00100s", 100 * S + MS)]
    #[case("10ns", 10 * NS)]
    #[case("11us", 11 * US)]
    #[case("12µs", 12 * US)]
    #[case("12μs", 12 * US)]
    #[case("13ms", 13 * MS)]
    #[case("14s", 14 * S)]
    #[case("15m", 15 * M)]
    #[case("16h", 16 * H)]
    #[case("3h30m", 3 * H + 30 * M)]
    #[case("10.5s4m", 4 * M + 10 * S + 500 * MS)]
    #[case("-2m3.4s", -(2 * M + 3 * S + 400 * MS))]
    #[case("1h2m3s4ms5us6ns", H + 2 * M + 3 * S + 4 * MS + 5 * US + 6 * NS)]
    #[case("39h9m14.425s", 39 * H + 9 * M + 14 * S + 425 * MS)]
    #[case("52763797000ns", 52_763_797_000 * NS)]
    #[case("0.3333333333333333333h", 20 * M)]
    #[case("9007199254740993ns", (1 << 53) + 1)]
    #[case("9223372036854775807ns", i64::MAX)]
    #[case("9223372036854775.807us", i64::MAX)]
    #[case("9223372036s854ms775us807ns", i64::MAX)]
    #[case("-9223372036854775808ns", i64::MIN)]
    #[case("-9223372036854775.808us", i64::MIN)]
    #[case("-9223372036s854ms775us808ns", i64::MIN)]
    #[case("-2562047h47m16.854775808s", i64::MIN)]
    #[case("0.100000000000000000000h", 6 * M)]
    #[case("0.830103483285477580700h", 49 * M + 48 * S + 372_539_827 * NS)]
    #[case("1.5s", 1_500 * MS)]
    #[case("1h2m", H + 2 * M)]
    #[case("300ms", 300 * MS)]
    #[case("-1.5h", -90 * M)]
    fn parses_like_go(#[case] text: &str, #[case] nanos: i64) {
        assert_eq!(parse_go_duration(text), Ok(GoDuration::from_nanos(nanos)));
    }

    /// Go's `parseDurationErrorTests`, with the whole message (Go checks the quoted part).
    #[rstest]
    #[case("", "time: invalid duration \"\"")]
    #[case("3", "time: missing unit in duration \"3\"")]
    #[case("-", "time: invalid duration \"-\"")]
    #[case("s", "time: invalid duration \"s\"")]
    #[case(".", "time: invalid duration \".\"")]
    #[case("-.", "time: invalid duration \"-.\"")]
    #[case(".s", "time: invalid duration \".s\"")]
    #[case("+.s", "time: invalid duration \"+.s\"")]
    #[case("1d", "time: unknown unit \"d\" in duration \"1d\"")]
    #[case("\u{FFFD}", "time: invalid duration \"\\xef\\xbf\\xbd\"")]
    #[case("\u{FFFD} hello \u{FFFD} world", "time: invalid duration \"\\xef\\xbf\\xbd hello \\xef\\xbf\\xbd world\"")]
    #[case("9223372036854775810ns", "time: invalid duration \"9223372036854775810ns\"")]
    #[case("9223372036854775808ns", "time: invalid duration \"9223372036854775808ns\"")]
    #[case("-9223372036854775809ns", "time: invalid duration \"-9223372036854775809ns\"")]
    #[case("9223372036854776us", "time: invalid duration \"9223372036854776us\"")]
    #[case("3000000h", "time: invalid duration \"3000000h\"")]
    #[case("9223372036854775.808us", "time: invalid duration \"9223372036854775.808us\"")]
    #[case("9223372036854ms775us808ns", "time: invalid duration \"9223372036854ms775us808ns\"")]
    #[case("1.5 s", "time: unknown unit \" s\" in duration \"1.5 s\"")]
    fn rejects_like_go(#[case] text: &str, #[case] message: &str) {
        let err = parse_go_duration(text).expect_err(text);
        assert_eq!(err.to_string(), message);
    }

    /// Go's `durationTests` of `Duration.String`.
    #[rstest]
    #[case(0, "0s")]
    #[case(NS, "1ns")]
    #[case(1_100 * NS, "1.1µs")]
    #[case(2_200 * US, "2.2ms")]
    #[case(3_300 * MS, "3.3s")]
    #[case(4 * M + 5 * S, "4m5s")]
    #[case(4 * M + 5_001 * MS, "4m5.001s")]
    #[case(5 * H + 6 * M + 7_001 * MS, "5h6m7.001s")]
    #[case(8 * M + NS, "8m0.000000001s")]
    #[case(i64::MAX, "2562047h47m16.854775807s")]
    #[case(i64::MIN, "-2562047h47m16.854775808s")]
    #[case(300 * S, "5m0s")]
    #[case(-90 * M, "-1h30m0s")]
    fn formats_like_go(#[case] nanos: i64, #[case] text: &str) {
        assert_eq!(format_go_duration(GoDuration::from_nanos(nanos)), text);
        assert_eq!(parse_go_duration(text), Ok(GoDuration::from_nanos(nanos)), "round trip");
    }

    #[test]
    fn converts_to_and_from_std_durations() {
        assert_eq!(format_go_duration(std::time::Duration::from_millis(1500)), "1.5s");
        assert_eq!(GoDuration::from(std::time::Duration::MAX), GoDuration::from_nanos(i64::MAX));
        let d: std::time::Duration = "1.5s".parse::<GoDuration>().unwrap().try_into().unwrap();
        assert_eq!(d, std::time::Duration::from_millis(1500));
        let negative = GoDuration::from_nanos(-S);
        assert_eq!(std::time::Duration::try_from(negative).unwrap_err().to_string(), "negative duration -1s");
    }
}
