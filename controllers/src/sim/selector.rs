//! Label selectors in their string form (`app=ray,tier!=web,env in (a,b),!legacy`), for the
//! knobs that choose which pods they apply to.

use std::collections::BTreeMap;

/// One requirement of a [`LabelSelector`].
#[derive(Debug, Clone, PartialEq, Eq)]
enum Requirement {
    In(String, Vec<String>),
    NotIn(String, Vec<String>),
    Exists(String),
    DoesNotExist(String),
}

/// A parsed label selector; the empty selector matches everything.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LabelSelector(Vec<Requirement>);

impl LabelSelector {
    /// Parses the string form kubectl's `-l` takes.
    pub fn parse(text: &str) -> Result<Self, String> {
        let mut reqs = Vec::new();
        for part in split_top_level(text) {
            let part = part.trim();
            if part.is_empty() {
                continue;
            }
            reqs.push(parse_requirement(part).map_err(|e| format!("invalid label selector {text:?}: {e}"))?);
        }
        Ok(Self(reqs))
    }

    /// Whether labels `labels` satisfy every requirement.
    pub fn matches(&self, labels: &BTreeMap<String, String>) -> bool {
        self.0.iter().all(|r| match r {
            Requirement::In(k, vs) => labels.get(k).is_some_and(|v| vs.contains(v)),
            Requirement::NotIn(k, vs) => labels.get(k).is_none_or(|v| !vs.contains(v)),
            Requirement::Exists(k) => labels.contains_key(k),
            Requirement::DoesNotExist(k) => !labels.contains_key(k),
        })
    }
}

/// Splits at commas outside parentheses.
fn split_top_level(text: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let (mut depth, mut start) = (0usize, 0usize);
    for (i, c) in text.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => depth = depth.saturating_sub(1),
            ',' if depth == 0 => {
                out.push(&text[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    out.push(&text[start..]);
    out
}

fn check_key(key: &str) -> Result<String, String> {
    let ok = !key.is_empty()
        && key.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | '/'))
        && key.chars().next().is_some_and(|c| c.is_ascii_alphanumeric());
    if ok { Ok(key.to_string()) } else { Err(format!("invalid label key {key:?}")) }
}

fn parse_values(text: &str) -> Result<Vec<String>, String> {
    let inner = text
        .trim()
        .strip_prefix('(')
        .and_then(|t| t.strip_suffix(')'))
        .ok_or_else(|| format!("expected a parenthesised value list, found {text:?}"))?;
    Ok(inner.split(',').map(|v| v.trim().to_string()).collect())
}

fn parse_requirement(part: &str) -> Result<Requirement, String> {
    if let Some(key) = part.strip_prefix('!') {
        return Ok(Requirement::DoesNotExist(check_key(key.trim())?));
    }
    if let Some((k, v)) = part.split_once("!=") {
        return Ok(Requirement::NotIn(check_key(k.trim())?, vec![v.trim().to_string()]));
    }
    if let Some((k, v)) = part.split_once("==").or_else(|| part.split_once('=')) {
        return Ok(Requirement::In(check_key(k.trim())?, vec![v.trim().to_string()]));
    }
    let words: Vec<&str> = part.splitn(2, char::is_whitespace).collect();
    match words.as_slice() {
        [key] => Ok(Requirement::Exists(check_key(key)?)),
        [key, rest] => {
            let rest = rest.trim_start();
            if let Some(values) = rest.strip_prefix("notin") {
                Ok(Requirement::NotIn(check_key(key)?, parse_values(values)?))
            } else if let Some(values) = rest.strip_prefix("in") {
                Ok(Requirement::In(check_key(key)?, parse_values(values)?))
            } else {
                Err(format!("unknown operator in {part:?} (expected =, ==, !=, in, notin)"))
            }
        }
        _ => Err(format!("cannot parse {part:?}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
    }

    #[test]
    fn selectors_match_like_kubectl() {
        let l = labels(&[("app", "ray"), ("ray.io/node-type", "worker")]);
        assert!(LabelSelector::parse("").unwrap().matches(&l));
        assert!(LabelSelector::parse("app=ray").unwrap().matches(&l));
        assert!(LabelSelector::parse("app==ray,ray.io/node-type in (head, worker)").unwrap().matches(&l));
        assert!(!LabelSelector::parse("app!=ray").unwrap().matches(&l));
        assert!(!LabelSelector::parse("ray.io/node-type notin (worker)").unwrap().matches(&l));
        assert!(LabelSelector::parse("app,!legacy").unwrap().matches(&l));
        assert!(!LabelSelector::parse("legacy").unwrap().matches(&l));
        assert!(LabelSelector::parse("app in ray").unwrap_err().contains("parenthesised"));
        assert!(LabelSelector::parse("a=b,=c").unwrap_err().contains("invalid label key"));
    }
}
