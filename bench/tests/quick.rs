//! `holdfast-bench --quick` runs every scenario against the real binaries
//! and writes a result for each subject, so the harness cannot rot. Timing
//! decides nothing here: only that every figure was measured.

use std::path::Path;
use std::process::Command;

use serde_json::Value;

#[test]
fn the_quick_benchmark_measures_every_scenario() {
    let bench = Path::new(env!("CARGO_BIN_EXE_holdfast-bench"));
    let bin_dir = bench.parent().expect("target/<profile>");
    let out = tempfile::tempdir().expect("temp dir");
    let json = out.path().join("results.json");
    let output = Command::new(bench)
        .arg("--quick")
        .arg("--bin-dir")
        .arg(bin_dir)
        .arg("--json")
        .arg(&json)
        .output()
        .expect("run holdfast-bench");
    let table = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{table}{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let results: Value =
        serde_json::from_slice(&std::fs::read(&json).expect("results")).expect("JSON");
    let rows = results["rows"].as_array().expect("rows");
    for scenario in 1..=11 {
        let prefix = format!("{scenario}. ");
        let of_scenario: Vec<&Value> = rows
            .iter()
            .filter(|r| {
                r["scenario"]
                    .as_str()
                    .is_some_and(|s| s.starts_with(&prefix))
            })
            .collect();
        let roles: Vec<&str> = of_scenario
            .iter()
            .filter_map(|r| r["role"].as_str())
            .collect();
        assert!(
            roles.contains(&"holdfast"),
            "scenario {scenario}: no holdfast row in\n{table}"
        );
        assert!(
            roles.contains(&"peer") || roles.contains(&"floor"),
            "scenario {scenario}: nothing to compare with in\n{table}"
        );
        for row in of_scenario {
            let figure = &row["figure"];
            let value = ["p50_us", "mb_per_s", "value"]
                .iter()
                .find_map(|k| figure[k].as_f64())
                .unwrap_or_else(|| panic!("no figure in {row}"));
            assert!(value.is_finite() && value >= 0.0, "{row}");
        }
    }
    assert!(table.contains("1. list at scale"), "no table:\n{table}");
}
