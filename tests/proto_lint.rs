//! `buf lint` over proto/ (rules in buf.yaml).
//!
//! CI installs buf and points HOLDFAST_BUF at it. Elsewhere a `buf` on PATH is
//! used.

use std::process::Command;

#[test]
fn protos_pass_buf_lint() {
    let buf = std::env::var("HOLDFAST_BUF").unwrap_or_else(|_| "buf".into());
    let root = env!("CARGO_MANIFEST_DIR");
    let output = match Command::new(&buf).arg("lint").current_dir(root).output() {
        Ok(output) => output,
        Err(error) if std::env::var_os("CI").is_none() => {
            eprintln!(
                "skipped: no buf ({error}); `npm install @bufbuild/buf` and set HOLDFAST_BUF, as .ci/run does"
            );
            return;
        }
        Err(error) => panic!("CI must provide buf at {buf:?}: {error}"),
    };
    assert!(
        output.status.success(),
        "buf lint failed:\n{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
}
