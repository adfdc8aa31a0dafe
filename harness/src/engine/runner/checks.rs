//! The expectations of a row: object checks (`eventually`, `consistently`) and timeline
//! checks (`before`, `never`, counts, `sequence`), each judged and its evidence recorded.

use super::*;

impl RowRun<'_> {
    /// Checks an object expectation once: what was selected and held, and on failure the lines
    /// that failed plus what was observed.
    async fn check_objects(&mut self, m: &ObjectMatch) -> Result<ObjectCheck, RowFailure> {
        let t = substitute_ref(&m.target, &self.bindings);
        let objs = self.fetch(&t).await?;
        let what = format!(
            "{} {}",
            t.kind,
            t.name
                .as_deref()
                .map(str::to_string)
                .or(t.selector.as_ref().map(|s| format!("-l {s}")))
                .map(|s| match &t.field_selector {
                    Some(f) => format!("{s} --field-selector {f}"),
                    None => s,
                })
                .or(t.field_selector.as_ref().map(|f| format!("--field-selector {f}")))
                .unwrap_or_default()
        );
        let fields = substitute_fields(&m.fields, &self.bindings);
        let mut lines = Vec::new();
        // Each selected object's mismatches, checked once.
        let per_object: Vec<Vec<String>> = if m.gone {
            Vec::new()
        } else {
            objs.iter()
                .map(|o| {
                    let failed = check_fields(o, &fields);
                    if failed.is_empty() {
                        return failed;
                    }
                    // A named object's name is known without decoding its metadata.
                    let name = match &t.name {
                        Some(n) => n.as_str(),
                        None => o.str_at(&["metadata", "name"]).unwrap_or_default(),
                    };
                    failed.into_iter().map(|l| format!("{} {name}: {l}", t.kind)).collect()
                })
                .collect()
        };
        let per_object_holding = per_object.iter().filter(|l| l.is_empty()).count();
        if m.gone {
            if !objs.is_empty() {
                lines.push(format!("{what}: expected gone, observed {} object(s)", objs.len()));
            }
        } else if let Some(n) = m.at_least {
            let holding = per_object_holding;
            if holding < n {
                lines.push(format!(
                    "{what}: expected at least {n} object(s) matching, observed {holding} of {}",
                    objs.len()
                ));
                lines.extend(per_object.into_iter().flatten());
            }
        } else {
            if let Some(n) = m.count {
                if objs.len() != n {
                    lines.push(format!("{what}: expected {n} object(s), observed {}", objs.len()));
                }
            } else if objs.is_empty() {
                lines.push(format!("{what}: expected to exist, observed none"));
            }
            lines.extend(per_object.into_iter().flatten());
        }
        let holding = if m.gone { 0 } else { per_object_holding };
        let selected = objs.len();
        let failure = (!lines.is_empty()).then(|| (lines.join("\n"), objs));
        Ok(ObjectCheck { selected, holding, failure })
    }

    fn mismatch(&self, e: &Expectation, diff: String, observed: Vec<Value>) -> Mismatch {
        Mismatch { expectation: yaml(e), diff, observed, at_ms: self.elapsed_ms() }
    }

    /// [`RowRun::mismatch`] with objects read from the API, decoded whole only now (a wait
    /// fails many checks before one of them is the last).
    fn mismatch_of(&self, e: &Expectation, diff: String, observed: Vec<LazyObject>) -> Mismatch {
        self.mismatch(e, diff, observed.into_iter().map(LazyObject::into_value).collect())
    }

    /// Records what a check saw, for the report.
    fn record(&self, e: &Expectation, unit: MatchedUnit, matched: usize, detail: Detail, passed: bool) {
        let (holding, then_matched) = match detail {
            Detail::None => (None, None),
            Detail::Holding(n) => (Some(n), None),
            Detail::Then(n) => (None, Some(n)),
        };
        self.ctx.evidence.lock().push(CheckEvidence {
            part: self.part.clone(),
            check: e.name().to_string(),
            unit,
            matched,
            holding,
            then_matched,
            passed,
        });
    }

    /// A timeline pattern's kind must be one the backend serves: a misspelt kind matches no
    /// write, and `never` or `atMost` over it would hold for no reason. Nor may the record of
    /// that kind have a gap (a watch recorder that lost writes).
    async fn require_served_kind(&mut self, pattern: &EventMatch, entries: &TimelineEntries) -> Result<(), RowFailure> {
        if let Some(gap) = self.ctx.timeline.gap(pattern.kind.as_deref()) {
            return Err(RowFailure::plain(format!("cannot judge the timeline: {gap}")));
        }
        let Some(kind) = pattern.kind.as_deref() else { return Ok(()) };
        if entries.iter().any(|w| w.meta.get("kind").and_then(Value::as_str) == Some(kind)) {
            return Ok(());
        }
        if self.resolver.serves_kind(kind).await? {
            Ok(())
        } else {
            Err(RowFailure::plain(format!(
                "the pattern names kind {kind:?}, which the server does not serve: it can match no write"
            )))
        }
    }

    pub(super) async fn expect(&mut self, e: &Expectation) -> Result<(), RowFailure> {
        let on_timeline = matches!(
            e,
            Expectation::Before(_)
                | Expectation::Never(_)
                | Expectation::AtMost { .. }
                | Expectation::Count { .. }
                | Expectation::AtLeast { .. }
                | Expectation::Sequence(_)
        );
        if on_timeline && !self.ctx.timeline.lag().is_zero() {
            tokio::time::sleep(self.ctx.timeline.lag()).await;
        }
        match e {
            Expectation::Eventually { object, within } => {
                let within = within.map(|d| d.0).unwrap_or(self.ctx.default_timeout);
                let deadline = Instant::now() + within;
                let mut checked_at: Option<u64> = None;
                let mut last = ObjectCheck::default();
                loop {
                    let revision = self.ctx.timeline.revision_of(&object.target.kind);
                    if revision.is_none() || revision != checked_at {
                        checked_at = revision;
                        last = self.check_objects(object).await?;
                        if last.failure.is_none() {
                            self.record(e, MatchedUnit::Objects, last.selected, Detail::Holding(last.holding), true);
                            return Ok(());
                        }
                    }
                    if Instant::now() >= deadline {
                        self.record(e, MatchedUnit::Objects, last.selected, Detail::Holding(last.holding), false);
                        let (diff, observed) = last.failure.unwrap_or_default();
                        let summary = format!("not true within {}", format_duration(within));
                        return Err(RowFailure {
                            message: format!("{summary}\n{diff}"),
                            summary,
                            mismatches: vec![self.mismatch_of(e, diff, observed)],
                            part: None,
                        });
                    }
                    tokio::time::sleep(self.ctx.poll).await;
                }
            }
            Expectation::Consistently { object, duration } => {
                let until = Instant::now() + duration.0;
                let mut checked_at: Option<u64> = None;
                let mut last = ObjectCheck::default();
                loop {
                    let revision = self.ctx.timeline.revision_of(&object.target.kind);
                    let unchanged = revision.is_some() && revision == checked_at;
                    checked_at = revision;
                    if !unchanged {
                        last = self.check_objects(object).await?;
                    }
                    if let Some((diff, observed)) = last.failure.take() {
                        self.record(e, MatchedUnit::Objects, last.selected, Detail::Holding(last.holding), false);
                        let summary = format!(
                            "stopped holding after {} of {}",
                            format_duration(duration.0.saturating_sub(until.saturating_duration_since(Instant::now()))),
                            format_duration(duration.0)
                        );
                        return Err(RowFailure {
                            message: format!("{summary}\n{diff}"),
                            summary,
                            mismatches: vec![self.mismatch_of(e, diff, observed)],
                            part: None,
                        });
                    }
                    if Instant::now() >= until {
                        self.record(e, MatchedUnit::Objects, last.selected, Detail::Holding(last.holding), true);
                        return Ok(());
                    }
                    tokio::time::sleep(self.ctx.poll.min(until.saturating_duration_since(Instant::now()))).await;
                }
            }
            Expectation::Before(b) => self.before_check(e, b).await,
            Expectation::Never(m) => self.count_check(e, m, |n| n == 0, "no write").await,
            Expectation::AtMost { n, event } => {
                self.count_check(e, event, |c| c <= *n, &format!("at most {n} write(s)")).await
            }
            Expectation::Count { n, event } => {
                self.count_check(e, event, |c| c == *n, &format!("exactly {n} write(s)")).await
            }
            Expectation::AtLeast { n, event } => {
                self.count_check(e, event, |c| c >= *n, &format!("at least {n} write(s)")).await
            }
            Expectation::Sequence(seq) => self.sequence_check(e, seq).await,
        }
    }

    /// [`Expectation::Before`]: both sides happened, in order. A `then` that never happened
    /// fails unless the row marked it optional.
    async fn before_check(&mut self, e: &Expectation, b: &BeforeMatch) -> Result<(), RowFailure> {
        let (first, then) = (&substitute_event(&b.first, &self.bindings), &substitute_event(&b.then, &self.bindings));
        let entries = self.ctx.timeline.entries();
        self.require_served_kind(first, &entries).await.map_err(|f| side_failure("first", f))?;
        self.require_served_kind(then, &entries).await.map_err(|f| side_failure("then", f))?;
        let rv = |x: &Value| x.get("resourceVersion").and_then(Value::as_u64).unwrap_or(0);
        let firsts: Vec<&TimelineItem> = entries.iter().filter(|w| event_matches(w, first)).collect();
        let thens: Vec<&TimelineItem> = entries.iter().filter(|w| event_matches(w, then)).collect();
        let nth = b.nth.unwrap_or(1).max(1);
        let problem = match (firsts.first(), thens.get(nth - 1)) {
            (None, _) => Some("no write matched `first`".to_string()),
            (Some(_), None) if b.then_optional => None,
            (Some(_), None) => Some(if thens.is_empty() {
                "no write matched `then`: an order with a write that never happened proves nothing (mark it `thenOptional: true` if the row means \"if it ever happens\")".to_string()
            } else {
                format!("`then` matched {} write(s), fewer than the {nth} the check compares with", thens.len())
            }),
            (Some(f), Some(t)) => {
                let ordered =
                    rv(&f.meta) < rv(&t.meta) && (!b.all || firsts.last().is_some_and(|l| rv(&l.meta) < rv(&t.meta)));
                (!ordered).then(|| "the order was wrong".to_string())
            }
        };
        self.record(e, MatchedUnit::Writes, firsts.len(), Detail::Then(thens.len()), problem.is_none());
        let Some(summary) = problem else { return Ok(()) };
        let describe = |v: &[&TimelineItem]| v.iter().map(|w| timeline_line(&w.meta)).collect::<Vec<_>>().join("\n");
        let diff = format!(
            "expected {}the writes matching `first` before the {} matching `then`\nfirst {} ({} write(s)):\n{}\nthen {} ({} write(s)):\n{}",
            if b.all { "all " } else { "" },
            if nth == 1 { "first".to_string() } else { format!("write #{nth}") },
            pattern_text(first),
            firsts.len(),
            describe(&firsts),
            pattern_text(then),
            thens.len(),
            describe(&thens)
        );
        Err(RowFailure {
            message: format!("{summary}\n{diff}"),
            summary,
            mismatches: vec![self.mismatch(e, diff, vec![])],
            part: None,
        })
    }

    /// [`Expectation::Sequence`]: the folded values of the matching writes, against the expected.
    async fn sequence_check(&mut self, e: &Expectation, seq: &crate::suite::SequenceMatch) -> Result<(), RowFailure> {
        let entries = self.ctx.timeline.entries();
        let event = &substitute_event(&seq.event, &self.bindings);
        self.require_served_kind(event, &entries).await?;
        let expected: Vec<Value> = seq.values.iter().map(|v| substitute(v, &self.bindings)).collect();
        let paths: Vec<String> = seq.paths.iter().map(|p| substitute_str(p, &self.bindings)).collect();
        // Observed values with the time each was first written, consecutive repeats folded.
        let mut observed: Vec<(Value, String)> = Vec::new();
        let mut matched = 0;
        for w in entries.iter().filter(|w| event_matches(w, event)) {
            matched += 1;
            let meta = &w.meta;
            let mut tuple = Vec::with_capacity(paths.len());
            for p in &paths {
                let v = crate::engine::matching::lookup(w, p).map_err(RowFailure::plain)?;
                tuple.push(v.cloned().unwrap_or(Value::Null));
            }
            let value = if tuple.len() == 1 { tuple.remove(0) } else { Value::Array(tuple) };
            if observed.last().is_none_or(|(last, _)| !same_value(last, &value)) {
                let time = meta.get("time").and_then(Value::as_str).unwrap_or_default().to_string();
                observed.push((value, time));
            }
        }
        let values: Vec<&Value> = observed.iter().map(|(v, _)| v).collect();
        let order_ok = if seq.subsequence {
            let mut it = values.iter();
            expected.iter().all(|want| it.any(|got| same_value(got, want)))
        } else if seq.may_skip {
            let mut it = expected.iter();
            let ends =
                |a: Option<&&Value>, b: Option<&Value>| a.zip(b).is_some_and(|(got, want)| same_value(got, want));
            ends(values.first(), expected.first())
                && ends(values.last(), expected.last())
                && values.iter().all(|got| it.any(|want| same_value(got, want)))
        } else {
            values.len() == expected.len() && values.iter().zip(&expected).all(|(got, want)| same_value(got, want))
        };
        let gap_problem = seq.min_gap.and_then(|min| gap_shorter_than(&observed, min.0));
        let passed = order_ok && gap_problem.is_none();
        self.record(e, MatchedUnit::Writes, matched, Detail::None, passed);
        if passed {
            return Ok(());
        }
        let shown: Vec<String> = observed.iter().map(|(v, t)| format!("  {t}  {v}")).collect();
        let want: Vec<String> = expected.iter().map(|v| format!("  {v}")).collect();
        let summary = match gap_problem {
            Some(g) if order_ok => g,
            _ => format!(
                "the values of {} were not {}the expected sequence",
                paths.join(", "),
                if seq.subsequence {
                    "in order a superset of "
                } else if seq.may_skip {
                    "the first, the last and in order some of "
                } else {
                    ""
                }
            ),
        };
        let diff = format!(
            "{summary}\nexpected:\n{}\nobserved (first write time, value):\n{}",
            want.join("\n"),
            shown.join("\n")
        );
        Err(RowFailure { message: diff.clone(), summary, mismatches: vec![self.mismatch(e, diff, vec![])], part: None })
    }

    async fn count_check(
        &mut self,
        e: &Expectation,
        m: &EventMatch,
        ok: impl Fn(usize) -> bool,
        want: &str,
    ) -> Result<(), RowFailure> {
        let entries = self.ctx.timeline.entries();
        let m = &substitute_event(m, &self.bindings);
        self.require_served_kind(m, &entries).await?;
        let matching: Vec<&TimelineItem> = entries.iter().filter(|w| event_matches(w, m)).collect();
        let passed = ok(matching.len());
        self.record(e, MatchedUnit::Writes, matching.len(), Detail::None, passed);
        if passed {
            return Ok(());
        }
        let lines: Vec<String> = matching.iter().map(|w| timeline_line(&w.meta)).collect();
        let summary = format!("expected {want} matching, observed {}", matching.len());
        let diff = format!("{summary}:\n{}", lines.join("\n"));
        Err(RowFailure {
            message: diff.clone(),
            summary,
            mismatches: vec![self.mismatch(e, diff, matching.iter().map(|w| w.object().clone()).collect())],
            part: None,
        })
    }
}

/// What a check counted beside its matches.
enum Detail {
    None,
    /// Selected objects that met every condition.
    Holding(usize),
    /// Writes matching `then`.
    Then(usize),
}

/// One read of an object expectation: what was selected, what held, and what failed.
#[derive(Default)]
struct ObjectCheck {
    selected: usize,
    holding: usize,
    /// The lines that failed and the objects observed, when the check did not hold.
    failure: Option<(String, Vec<LazyObject>)>,
}

/// Names the side of a `before` whose pattern cannot match.
fn side_failure(side: &str, f: RowFailure) -> RowFailure {
    RowFailure::plain(format!("`{side}`: {}", f.summary))
}

/// A pattern as a reader wrote it: `{kind: Pod, name: held}`.
fn pattern_text(m: &EventMatch) -> String {
    let fields = [
        ("verb", &m.verb),
        ("change", &m.change),
        ("kind", &m.kind),
        ("name", &m.name),
        ("namePrefix", &m.name_prefix),
        ("subresource", &m.subresource),
        ("actor", &m.actor),
        ("user", &m.user),
    ];
    let mut parts: Vec<String> = fields.iter().filter_map(|(k, v)| v.as_ref().map(|v| format!("{k}: {v}"))).collect();
    if !m.fields.is_empty() {
        parts.push(format!("match: {} condition(s)", m.fields.len()));
    }
    format!("{{{}}}", parts.join(", "))
}

/// The first change that came sooner than `min` after the one before it, as a message.
fn gap_shorter_than(observed: &[(Value, String)], min: Duration) -> Option<String> {
    let parsed: Vec<Option<jiff::Timestamp>> = observed.iter().map(|(_, t)| t.parse().ok()).collect();
    let min = jiff::SignedDuration::try_from(min).unwrap_or_default();
    parsed.windows(2).enumerate().find_map(|(i, pair)| match pair {
        [Some(a), Some(b)] if b.duration_since(*a) < min => Some(format!(
            "change {} ({} at {}) came {}s after the previous one, less than {}",
            i + 2,
            observed[i + 1].0,
            observed[i + 1].1,
            b.duration_since(*a).as_secs(),
            format_duration(min.unsigned_abs())
        )),
        _ => None,
    })
}

/// Loose equality of observed and expected values: numbers by value (`3` equals `3.0`), lists
/// element by element.
fn same_value(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => x.as_f64() == y.as_f64(),
        (Value::Array(x), Value::Array(y)) => x.len() == y.len() && x.iter().zip(y).all(|(p, q)| same_value(p, q)),
        _ => a == b,
    }
}

/// One timeline entry as a line: `rv verb CHANGE Kind ns/name by agent`.
pub fn timeline_line(m: &Value) -> String {
    let s = |k: &str| m.get(k).and_then(Value::as_str).unwrap_or_default();
    let ns = s("namespace");
    let id = if ns.is_empty() { s("name").to_string() } else { format!("{ns}/{}", s("name")) };
    let sub = m.get("subresource").and_then(Value::as_str).map(|x| format!(" [{x}]")).unwrap_or_default();
    format!(
        "  rv {} {} {} {} {id}{sub} by {}",
        m.get("resourceVersion").map(|v| v.to_string()).unwrap_or_default(),
        s("verb"),
        s("change"),
        s("kind"),
        s("userAgent")
    )
}
