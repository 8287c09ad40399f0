//! Generates the daemon's own copy of the `PtyDaemon` server trait.
//!
//! Every message is the `holdfast-api` crate's generated type except
//! `ListResponse`. That one is the daemon's `listing::ListResponse`. It is
//! wire-identical, but assembled from each session's encoding kept ready (see
//! `listing.rs`).

fn main() -> Result<(), Box<dyn std::error::Error>> {
    println!("cargo:rerun-if-changed=../proto");
    let descriptors = protox::compile(["holdfast/daemon/v1/daemon.proto"], ["../proto"])?;
    tonic_prost_build::configure()
        .build_client(false)
        .codec_path("::holdfast_api::codec::SliceCodec")
        .extern_path(".holdfast.daemon.v1", "::holdfast_api::proto::daemon::v1")
        .extern_path(
            ".holdfast.daemon.v1.ListResponse",
            "crate::listing::ListResponse",
        )
        .compile_fds(descriptors)?;
    Ok(())
}
