//! Results: one row per subject measured.
//!
//! The rows are printed as a table and written as JSON. Each holdfast row
//! carries its ratio to the scenario's floor and peer.

use std::time::Duration;

use serde_json::{Value, json};

use crate::stats::Samples;

/// What a row is, for the ratios.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    Holdfast,
    /// The peer, tmux.
    Peer,
    /// The physical floor (raw PTY, a bare RPC, the deadline).
    Floor,
}

impl Role {
    fn name(self) -> &'static str {
        match self {
            Role::Holdfast => "holdfast",
            Role::Peer => "peer",
            Role::Floor => "floor",
        }
    }
}

/// A measured figure.
#[derive(Debug, Clone)]
pub enum Figure {
    Latency {
        p50: Duration,
        p99: Duration,
        n: usize,
    },
    /// Megabytes (10^6 bytes) per second.
    Throughput(f64),
    /// A count or size with its unit, lower is better.
    Amount { value: f64, unit: &'static str },
}

impl Figure {
    pub fn latency(samples: &Samples) -> Self {
        Figure::Latency {
            p50: samples.p50(),
            p99: samples.p99(),
            n: samples.len(),
        }
    }

    /// Whether the two measure the same kind of thing.
    fn comparable(&self, other: &Figure) -> bool {
        match (self, other) {
            (Figure::Latency { .. }, Figure::Latency { .. }) => true,
            (Figure::Throughput(_), Figure::Throughput(_)) => true,
            (Figure::Amount { unit: a, .. }, Figure::Amount { unit: b, .. }) => a == b,
            _ => false,
        }
    }

    /// The number ratios compare: p50 in µs, MB/s or the amount.
    fn headline(&self) -> f64 {
        match self {
            Figure::Latency { p50, .. } => p50.as_secs_f64() * 1e6,
            Figure::Throughput(mb) => *mb,
            Figure::Amount { value, .. } => *value,
        }
    }

    fn text(&self) -> String {
        match self {
            Figure::Latency { p50, p99, n } => {
                format!("p50 {} · p99 {} (n={n})", micros(*p50), micros(*p99))
            }
            Figure::Throughput(mb) => format!("{mb:.1} MB/s"),
            Figure::Amount { value, unit } => format!("{value:.1} {unit}"),
        }
    }

    fn json(&self) -> Value {
        match self {
            Figure::Latency { p50, p99, n } => json!({
                "p50_us": p50.as_secs_f64() * 1e6,
                "p99_us": p99.as_secs_f64() * 1e6,
                "samples": n,
            }),
            Figure::Throughput(mb) => json!({ "mb_per_s": mb }),
            Figure::Amount { value, unit } => json!({ "value": value, "unit": unit }),
        }
    }
}

pub fn micros(d: Duration) -> String {
    let us = d.as_secs_f64() * 1e6;
    if us >= 10_000.0 {
        format!("{:.1} ms", us / 1000.0)
    } else if us >= 1000.0 {
        format!("{:.2} ms", us / 1000.0)
    } else {
        format!("{us:.0} µs")
    }
}

/// One measured subject.
#[derive(Debug, Clone)]
pub struct Row {
    pub scenario: &'static str,
    pub role: Role,
    pub subject: String,
    pub figure: Figure,
    /// The target, in words, for holdfast rows that have one.
    pub target: Option<String>,
    /// Whether the target is met, when there is one.
    pub met: Option<bool>,
    pub note: Option<String>,
    /// The floor row this one is compared with, by subject; the
    /// scenario's first comparable floor when none is named.
    pub against: Option<String>,
}

impl Row {
    pub fn new(
        scenario: &'static str,
        role: Role,
        subject: impl Into<String>,
        figure: Figure,
    ) -> Self {
        Self {
            scenario,
            role,
            subject: subject.into(),
            figure,
            target: None,
            met: None,
            note: None,
            against: None,
        }
    }

    /// A target and whether this figure meets it.
    pub fn target(mut self, text: impl Into<String>, met: bool) -> Self {
        self.target = Some(text.into());
        self.met = Some(met);
        self
    }

    pub fn note(mut self, text: impl Into<String>) -> Self {
        self.note = Some(text.into());
        self
    }

    /// Compares this row with the floor row of this subject.
    pub fn against(mut self, floor: impl Into<String>) -> Self {
        self.against = Some(floor.into());
        self
    }
}

/// All rows of a run.
#[derive(Debug, Default)]
pub struct Report {
    pub rows: Vec<Row>,
}

impl Report {
    pub fn add(&mut self, row: Row) {
        self.rows.push(row);
    }

    /// holdfast's headline over the first row of `role` in the same
    /// scenario; for throughput, the share of it.
    fn ratio(&self, row: &Row, role: Role) -> Option<f64> {
        if row.role != Role::Holdfast {
            return None;
        }
        let named = |r: &Row| {
            role != Role::Floor || row.against.as_ref().is_none_or(|floor| *floor == r.subject)
        };
        let other = self.rows.iter().find(|r| {
            r.scenario == row.scenario
                && r.role == role
                && r.figure.comparable(&row.figure)
                && named(r)
        })?;
        let (mine, theirs) = (row.figure.headline(), other.figure.headline());
        (theirs > 0.0).then(|| mine / theirs)
    }

    pub fn table(&self) -> String {
        let mut out = String::new();
        let mut scenario = "";
        for row in &self.rows {
            if row.scenario != scenario {
                scenario = row.scenario;
                out.push_str(&format!("\n{scenario}\n"));
            }
            let ratios: Vec<String> = [(Role::Floor, "floor"), (Role::Peer, "tmux")]
                .into_iter()
                .filter_map(|(role, name)| self.ratio(row, role).map(|r| format!("{r:.2}× {name}")))
                .collect();
            let verdict = match (row.met, &row.target) {
                (Some(true), Some(t)) => format!("  target {t}: met"),
                (Some(false), Some(t)) => format!("  target {t}: MISSED"),
                _ => String::new(),
            };
            out.push_str(&format!(
                "  {:<44} {:<36} {:<22}{verdict}\n",
                row.subject,
                row.figure.text(),
                ratios.join(" · "),
            ));
            if let Some(note) = &row.note {
                out.push_str(&format!("  {:<44} ({note})\n", ""));
            }
        }
        out
    }

    pub fn json(&self, meta: Value) -> Value {
        let rows: Vec<Value> = self
            .rows
            .iter()
            .map(|row| {
                json!({
                    "scenario": row.scenario,
                    "role": row.role.name(),
                    "subject": row.subject,
                    "figure": row.figure.json(),
                    "ratio_to_floor": self.ratio(row, Role::Floor),
                    "ratio_to_peer": self.ratio(row, Role::Peer),
                    "target": row.target,
                    "met": row.met,
                    "note": row.note,
                })
            })
            .collect();
        json!({ "meta": meta, "rows": rows })
    }
}
