//! The version this daemon image reports.
//!
//! It is the workspace's version. Tests of the upgrade need two images that
//! report different versions from one build: with
//! `HOLDFAST_TEST_VERSION_FROM_EXE` set, the executable's file name is
//! appended (`0.1.0+daemon-b`).

use std::sync::OnceLock;

/// The version this image reports in `List`, probes and logs.
pub fn version() -> &'static str {
    static VERSION: OnceLock<String> = OnceLock::new();
    VERSION.get_or_init(|| {
        let named = std::env::var_os("HOLDFAST_TEST_VERSION_FROM_EXE").is_some();
        let exe = std::env::current_exe().ok();
        match exe.as_deref().and_then(std::path::Path::file_name) {
            Some(name) if named => format!("{}+{}", holdfast_api::VERSION, name.to_string_lossy()),
            _ => holdfast_api::VERSION.to_owned(),
        }
    })
}
