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
    // The state an image hands to the next in an upgrade: messages only.
    let state = protox::compile(["holdfast/daemon/state/v1/state.proto"], ["../proto"])?;
    tonic_prost_build::configure()
        .build_client(false)
        .build_server(false)
        .compile_fds(state)?;
    Ok(())
}
