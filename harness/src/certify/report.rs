//! Verdicts and their reports: the table on the terminal, the certificate (JSON, versioned
//! schema), JUnit XML for CI, and a Markdown report to attach to a release.

use crate::certify::CertifyOptions;
use crate::certify::contract::{CertProfile, Contract, Scenario, Workload};
use crate::report::junit::{JunitCase, JunitOutcome, JunitSuite, render_junit};
use serde::Serialize;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// The certificate's schema identifier; bumped on any incompatible change.
pub const CERTIFICATE_SCHEMA: &str = "kproof.dev/certificate/v1";

/// A verdict.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Verdict {
    /// Passed: the scenario passed, or every scenario judging the obligation did.
    Pass,
    /// Failed: the scenario failed, or some scenario judging the obligation did.
    Fail,
    /// Not judged: no scenario judges the obligation in this profile.
    NotApplicable,
}

impl Verdict {
    /// As printed.
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Pass => "pass",
            Verdict::Fail => "fail",
            Verdict::NotApplicable => "not-applicable",
        }
    }
}

/// One scenario's run.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ScenarioResult {
    /// The scenario's id in the contract.
    pub id: String,
    /// The scenario's title.
    pub title: String,
    /// The namespace the scenario ran in.
    pub namespace: String,
    /// The obligations it judges.
    pub obligations: Vec<String>,
    /// `pass` or `fail`.
    pub outcome: Verdict,
    /// Wall-clock time the scenario took.
    pub wall_ms: u64,
    /// One line: what failed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub failure: Option<String>,
    /// Expected against observed, from the scenario's step or expectation.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
    /// Timeline writes, object states, controller log lines.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub evidence: Vec<String>,
    /// The controller's log file.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub log: Option<String>,
}

impl ScenarioResult {
    pub(crate) fn new(s: &Scenario, namespace: &str) -> Self {
        Self {
            id: s.id.clone(),
            title: s.title.clone(),
            namespace: namespace.to_string(),
            obligations: s.obligations.clone(),
            outcome: Verdict::Fail,
            wall_ms: 0,
            failure: None,
            detail: None,
            evidence: Vec::new(),
            log: None,
        }
    }

    pub(crate) fn failed(mut self, summary: String, detail: Option<String>, evidence: Vec<String>) -> Self {
        self.outcome = Verdict::Fail;
        self.failure = Some(summary);
        self.detail = detail;
        self.evidence = evidence;
        self
    }
}

/// One obligation's verdict.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ObligationVerdict {
    /// The obligation's id (`C1` ... `C18`).
    pub id: String,
    /// What the controller must do.
    pub title: String,
    /// The upstream sources the obligation rests on.
    pub source: String,
    /// Pass, fail or not applicable.
    pub verdict: Verdict,
    /// Why not applicable, or which scenarios failed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// The scenarios that judged it.
    pub scenarios: Vec<String>,
}

/// The tool that issued a certificate.
#[derive(Debug, Clone, Serialize)]
pub struct Tool {
    /// The tool's name, `kproof`.
    pub name: &'static str,
    /// The tool's version (the crate version).
    pub version: &'static str,
}

/// What was certified.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CertifiedWorkload {
    /// The workload's `apiVersion`.
    pub api_version: String,
    /// The workload's `kind`.
    pub kind: String,
    /// The workload kind's plural resource name, from its CRD.
    pub resource: String,
    /// Dotted path of the replica count in the workload.
    pub replicas_path: String,
}

/// The settings a certification ran with.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Settings {
    /// T_release: how long the controller may take to release after the last pod.
    pub t_release: String,
    /// How long slowly terminating pods take to stop.
    pub termination_grace: String,
    /// The longest a scenario may take.
    pub scenario_timeout: String,
}

/// The certificate.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Certificate {
    /// The certificate's schema identifier ([`CERTIFICATE_SCHEMA`]).
    pub schema: &'static str,
    /// The tool that issued the certificate.
    pub tool: Tool,
    /// The contract certified against (`reservedfor`).
    pub contract: String,
    /// The profile the controller was certified in.
    pub profile: CertProfile,
    /// The Kubernetes semantics the reference components model.
    pub semantics: &'static str,
    /// The command that ran the controller.
    pub controller_command: Vec<String>,
    /// The workload the controller was certified with.
    pub workload: CertifiedWorkload,
    /// The settings the certification ran with.
    pub settings: Settings,
    /// When the certification started (RFC 3339).
    pub started_at: String,
    /// Wall-clock time the whole certification took.
    pub wall_ms: u64,
    /// True when at least one obligation was judged and every judged one passed.
    pub certified: bool,
    /// One verdict per obligation: all of them, or those `--obligations` names.
    pub obligations: Vec<ObligationVerdict>,
    /// Every scenario's result.
    pub scenarios: Vec<ScenarioResult>,
}

pub(crate) fn certificate(
    contract: &Contract,
    opts: &CertifyOptions,
    workload: &Workload,
    scenarios: Vec<ScenarioResult>,
    started_at: String,
    wall_ms: u64,
) -> Certificate {
    let profile = opts.profile;
    let obligations: Vec<ObligationVerdict> = contract
        .obligations
        .iter()
        .filter(|o| opts.obligations.is_empty() || opts.obligations.contains(&o.id))
        .map(|o| {
            let judged: Vec<&ScenarioResult> = scenarios.iter().filter(|s| s.obligations.contains(&o.id)).collect();
            let failed: Vec<&str> =
                judged.iter().filter(|s| s.outcome == Verdict::Fail).map(|s| s.id.as_str()).collect();
            let (verdict, reason) = if judged.is_empty() {
                let why =
                    o.not_applicable.get(&profile).cloned().unwrap_or_else(|| "no scenario in this profile".into());
                (Verdict::NotApplicable, Some(why))
            } else if failed.is_empty() {
                (Verdict::Pass, None)
            } else {
                (Verdict::Fail, Some(format!("failed: {}", failed.join(", "))))
            };
            ObligationVerdict {
                id: o.id.clone(),
                title: o.title.clone(),
                source: o.source.clone(),
                verdict,
                reason,
                scenarios: judged.iter().map(|s| s.id.clone()).collect(),
            }
        })
        .collect();
    // Nothing judged is no certificate: a profile without scenarios must not pass vacuously.
    let judged = obligations.iter().any(|o| o.verdict != Verdict::NotApplicable);
    let certified = judged && obligations.iter().all(|o| o.verdict != Verdict::Fail);
    let duration = crate::suite::format_duration;
    Certificate {
        schema: CERTIFICATE_SCHEMA,
        tool: Tool { name: "kproof", version: env!("CARGO_PKG_VERSION") },
        contract: contract.contract.clone(),
        profile,
        semantics: profile.semantics(),
        controller_command: opts.command.clone(),
        workload: CertifiedWorkload {
            api_version: workload.manifest["apiVersion"].as_str().unwrap_or_default().to_string(),
            kind: workload.manifest["kind"].as_str().unwrap_or_default().to_string(),
            resource: workload.resource.clone(),
            replicas_path: workload.replicas_path.clone(),
        },
        settings: Settings {
            t_release: duration(opts.release),
            termination_grace: duration(opts.grace),
            scenario_timeout: duration(opts.scenario_timeout),
        },
        started_at,
        wall_ms,
        certified,
        obligations,
        scenarios,
    }
}

impl Certificate {
    /// The verdict table printed on the terminal.
    pub fn table(&self) -> String {
        let mut out = String::new();
        let _ = writeln!(
            out,
            "kproof certify {} --profile {}: {}",
            self.contract,
            self.profile,
            self.controller_command.join(" ")
        );
        let _ = writeln!(out);
        let _ = writeln!(out, "{:<4} {:<15} obligation", "", "verdict");
        for o in &self.obligations {
            let mut title = o.title.clone();
            if title.chars().count() > 70 {
                title = title.chars().take(69).collect::<String>() + "…";
            }
            let _ = writeln!(out, "{:<4} {:<15} {title}", o.id, o.verdict.as_str());
            if let Some(r) = &o.reason {
                let _ = writeln!(out, "{:<20} {r}", "");
            }
        }
        let failed: Vec<&ScenarioResult> = self.scenarios.iter().filter(|s| s.outcome == Verdict::Fail).collect();
        for s in &failed {
            let _ = writeln!(
                out,
                "\nscenario {} ({}) failed: {}",
                s.id,
                s.obligations.join(", "),
                s.failure.as_deref().unwrap_or_default()
            );
            if let Some(d) = &s.detail {
                for l in d.lines().take(20) {
                    let _ = writeln!(out, "  {l}");
                }
            }
            if let Some(log) = &s.log {
                let _ = writeln!(out, "  controller log: {log}");
            }
        }
        let count = |v: Verdict| self.obligations.iter().filter(|o| o.verdict == v).count();
        let _ = writeln!(
            out,
            "\n{} pass, {} fail, {} not applicable; {} scenarios in {:.1} s: {}",
            count(Verdict::Pass),
            count(Verdict::Fail),
            count(Verdict::NotApplicable),
            self.scenarios.len(),
            self.wall_ms as f64 / 1000.0,
            if self.certified {
                "CERTIFIED"
            } else if self.obligations.iter().all(|o| o.verdict == Verdict::NotApplicable) {
                "NOT CERTIFIED (no obligation applies to this profile and selection)"
            } else {
                "NOT CERTIFIED"
            }
        );
        out
    }

    /// The Markdown report.
    pub fn markdown(&self) -> String {
        let mut out = String::new();
        let _ = writeln!(out, "# ReservedFor certification: {} (profile {})\n", self.workload.kind, self.profile);
        let _ = writeln!(out, "- result: **{}**", if self.certified { "certified" } else { "not certified" });
        let _ = writeln!(
            out,
            "- tool: kproof {} (contract `{}`, schema `{}`)",
            self.tool.version, self.contract, self.schema
        );
        let _ = writeln!(out, "- semantics modelled: {}", self.semantics);
        let _ = writeln!(out, "- controller: `{}`", self.controller_command.join(" "));
        let _ = writeln!(
            out,
            "- workload: {} {} (`{}`, replicas at `{}`)",
            self.workload.api_version, self.workload.kind, self.workload.resource, self.workload.replicas_path
        );
        let _ = writeln!(
            out,
            "- T_release {}, termination grace {}, started {}, took {:.1} s\n",
            self.settings.t_release,
            self.settings.termination_grace,
            self.started_at,
            self.wall_ms as f64 / 1000.0
        );
        let _ = writeln!(out, "| | verdict | obligation | scenarios | note |\n|---|---|---|---|---|");
        for o in &self.obligations {
            let _ = writeln!(
                out,
                "| {} | {} | {} | {} | {} |",
                o.id,
                o.verdict.as_str(),
                o.title.replace('|', "\\|"),
                o.scenarios.join(", "),
                o.reason.as_deref().unwrap_or("").replace('|', "\\|")
            );
        }
        for s in self.scenarios.iter().filter(|s| s.outcome == Verdict::Fail) {
            let _ = writeln!(out, "\n## Scenario `{}` failed ({})\n", s.id, s.obligations.join(", "));
            let _ = writeln!(out, "{}\n", s.failure.as_deref().unwrap_or_default());
            let _ = writeln!(out, "```");
            if let Some(d) = &s.detail {
                let _ = writeln!(out, "{d}");
            }
            for e in &s.evidence {
                let _ = writeln!(out, "{e}");
            }
            let _ = writeln!(out, "```");
        }
        out
    }

    /// JUnit XML: one test case per obligation (skipped when not applicable), written by the
    /// run report's JUnit writer.
    pub fn junit(&self) -> String {
        let cases = self
            .obligations
            .iter()
            .map(|o| {
                let outcome = match o.verdict {
                    Verdict::Pass => JunitOutcome::Passed,
                    Verdict::NotApplicable => JunitOutcome::Skipped(o.reason.clone().unwrap_or_default()),
                    Verdict::Fail => {
                        let mut body = String::new();
                        for s in self
                            .scenarios
                            .iter()
                            .filter(|s| s.outcome == Verdict::Fail && s.obligations.contains(&o.id))
                        {
                            let _ = writeln!(body, "scenario {}: {}", s.id, s.failure.as_deref().unwrap_or_default());
                            if let Some(d) = &s.detail {
                                let _ = writeln!(body, "{d}");
                            }
                            for e in &s.evidence {
                                let _ = writeln!(body, "{e}");
                            }
                        }
                        JunitOutcome::Failed { message: o.reason.clone().unwrap_or_default(), kind: None, body }
                    }
                };
                JunitCase {
                    classname: format!("{}.{}", self.contract, self.profile),
                    name: format!("{} {}", o.id, o.title),
                    time_ms: 0,
                    properties: vec![("source".to_string(), o.source.clone())],
                    outcome,
                    system_out: None,
                }
            })
            .collect();
        let suite = JunitSuite {
            name: format!("kproof certify {} {}", self.contract, self.profile),
            time_ms: self.wall_ms,
            timestamp: Some(self.started_at.clone()),
            properties: vec![("schema".to_string(), self.schema.to_string())],
            cases,
        };
        render_junit("kproof certify", self.wall_ms, &[suite])
    }

    /// Writes `certificate.json`, `junit.xml` and `report.md` into `dir`; their paths.
    pub fn write(&self, dir: &Path) -> std::io::Result<Vec<PathBuf>> {
        std::fs::create_dir_all(dir)?;
        let json = serde_json::to_string_pretty(self).map_err(std::io::Error::other)?;
        let files = [("certificate.json", json), ("junit.xml", self.junit()), ("report.md", self.markdown())];
        let mut paths = Vec::new();
        for (name, text) in files {
            let p = dir.join(name);
            std::fs::write(&p, text)?;
            paths.push(p);
        }
        Ok(paths)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn obligation(id: &str, verdict: Verdict, reason: Option<&str>) -> ObligationVerdict {
        ObligationVerdict {
            id: id.into(),
            title: format!("{id} <title>"),
            source: "https://github.com/kubernetes/enhancements/pull/5195".into(),
            verdict,
            reason: reason.map(Into::into),
            scenarios: vec!["s1".into()],
        }
    }

    #[test]
    fn junit_counts_each_verdict_and_carries_the_failing_scenario() {
        let mut scenario = ScenarioResult {
            id: "s1".into(),
            title: "t".into(),
            namespace: "ns".into(),
            obligations: vec!["O2".into()],
            outcome: Verdict::Fail,
            wall_ms: 5,
            failure: None,
            detail: Some("expected 1 & got 0".into()),
            evidence: vec![],
            log: None,
        };
        scenario.failure = Some("claim kept".into());
        let cert = Certificate {
            schema: CERTIFICATE_SCHEMA,
            tool: Tool { name: "kproof", version: "0" },
            contract: "reservedfor".into(),
            profile: CertProfile::Raw,
            semantics: CertProfile::Raw.semantics(),
            controller_command: vec![],
            workload: CertifiedWorkload {
                api_version: "v1".into(),
                kind: "X".into(),
                resource: "xs".into(),
                replicas_path: "/spec/replicas".into(),
            },
            settings: Settings {
                t_release: "1s".into(),
                termination_grace: "1s".into(),
                scenario_timeout: "1s".into(),
            },
            started_at: "2026-12-03T00:00:00Z".into(),
            wall_ms: 1234,
            certified: false,
            obligations: vec![
                obligation("O1", Verdict::Pass, None),
                obligation("O2", Verdict::Fail, Some("failed: s1")),
                obligation("O3", Verdict::NotApplicable, Some("no scenario in this profile")),
            ],
            scenarios: vec![scenario],
        };
        let xml = cert.junit();
        assert!(xml.contains("<testsuites name=\"kproof certify\" tests=\"3\" failures=\"1\" errors=\"0\" skipped=\"1\" time=\"1.234\">"), "{xml}");
        assert!(xml.contains("name=\"O1 O1 &lt;title&gt;\""), "{xml}");
        assert!(
            xml.contains("<failure message=\"failed: s1\">scenario s1: claim kept\nexpected 1 &amp; got 0\n</failure>"),
            "{xml}"
        );
        assert!(xml.contains("<skipped message=\"no scenario in this profile\"/>"), "{xml}");
    }
}
