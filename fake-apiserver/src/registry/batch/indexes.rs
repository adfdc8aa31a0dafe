//! The compressed index lists of Indexed Jobs (`"1,3-5,7"`): their parsing, shared by the
//! success policy (`succeededIndexes`) and the status (`completedIndexes`, `failedIndexes`),
//! as in kube-apiserver v1.37.2 `pkg/apis/batch/validation/validation.go`.

use apimachinery::go::quote;

/// Go's `strconv.Atoi`: an optional sign and decimal digits, nothing else.
fn atoi(s: &str) -> Option<i64> {
    let digits = s.strip_prefix(['+', '-']).unwrap_or(s);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    s.parse().ok()
}

/// `parseIndexInterval`: one `x` or `x-y` interval below `completions`, or the error text.
pub(crate) fn parse_index_interval(interval: &str, completions: i64) -> Result<(i64, i64), String> {
    let limits: Vec<&str> = interval.split('-').collect();
    if limits.len() > 2 {
        return Err(format!(
            "the fragment {} violates the requirement that an index interval can have at most two parts separated by '-'",
            quote(interval)
        ));
    }
    let bound = |text: &str| -> Result<i64, String> {
        let n = atoi(text).ok_or_else(|| format!("cannot convert string to integer for index: {}", quote(text)))?;
        if n >= completions {
            return Err(format!("too large index: {}", quote(text)));
        }
        Ok(n)
    };
    let x = bound(limits[0])?;
    let Some(second) = limits.get(1) else { return Ok((x, x)) };
    let y = bound(second)?;
    if x >= y {
        return Err(format!("non-increasing order, previous: {x}, current: {y}"));
    }
    Ok((x, y))
}

/// `validateIndexesFormat`: the number of indexes the list names, or the error text.
pub(crate) fn validate_indexes_format(indexes: &str, completions: i64) -> Result<i64, String> {
    if indexes.is_empty() {
        return Ok(0);
    }
    let mut last: Option<i64> = None;
    let mut total = 0;
    for interval in indexes.split(',') {
        let (x, y) = parse_index_interval(interval, completions)?;
        if let Some(l) = last.filter(|l| *l >= x) {
            return Err(format!("non-increasing order, previous: {l}, current: {x}"));
        }
        total += y - x + 1;
        last = Some(y);
    }
    Ok(total)
}

/// `validateFailedIndexesNotOverlapCompleted`: walks both lists in step, skipping intervals
/// that do not parse (their format is reported elsewhere).
pub(crate) fn failed_overlapping_completed(completed: &str, failed: &str, completions: i64) -> Option<String> {
    if completed.is_empty() || failed.is_empty() {
        return None;
    }
    let completed: Vec<&str> = completed.split(',').collect();
    let failed: Vec<&str> = failed.split(',').collect();
    let (mut cp, mut fp) = (0, 0);
    let mut c = parse_index_interval(completed[0], completions);
    let mut f = parse_index_interval(failed[0], completions);
    while cp < completed.len() && fp < failed.len() {
        match (&c, &f) {
            (Err(_), _) => {
                cp += 1;
                if cp < completed.len() {
                    c = parse_index_interval(completed[cp], completions);
                }
            }
            (_, Err(_)) => {
                fp += 1;
                if fp < failed.len() {
                    f = parse_index_interval(failed[fp], completions);
                }
            }
            (Ok((cx, cy)), Ok((fx, fy))) => {
                if cx <= fy && fx <= cy {
                    return Some(format!("failedIndexes and completedIndexes overlap at index: {}", cx.max(fx)));
                }
                if cx <= fx {
                    cp += 1;
                    if cp < completed.len() {
                        c = parse_index_interval(completed[cp], completions);
                    }
                } else {
                    fp += 1;
                    if fp < failed.len() {
                        f = parse_index_interval(failed[fp], completions);
                    }
                }
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn index_lists_parse_as_upstream_counts_and_refuses_them() {
        assert_eq!(validate_indexes_format("0,2,4", 10), Ok(3));
        assert_eq!(validate_indexes_format("1,3,5-9", 10), Ok(7));
        assert_eq!(validate_indexes_format("3,1", 10), Err("non-increasing order, previous: 3, current: 1".into()));
        assert_eq!(validate_indexes_format("1-2-3", 10).unwrap_err().split(' ').nth(1), Some("fragment"));
        assert_eq!(validate_indexes_format("a", 10), Err(r#"cannot convert string to integer for index: "a""#.into()));
        assert_eq!(validate_indexes_format("10", 10), Err(r#"too large index: "10""#.into()));
        assert_eq!(
            failed_overlapping_completed("0-2,5", "3,5", 10),
            Some("failedIndexes and completedIndexes overlap at index: 5".into())
        );
        assert_eq!(failed_overlapping_completed("0-2", "3-4", 10), None);
    }
}
