//! Generates the host-service's own copy of its server traits.
//!
//! Every message is the `holdfast-api` crate's generated type except
//! `ListSessionsResponse`. That one is the host's
//! `grpc::listing::ListSessionsResponse`. It is wire-identical, but assembled
//! from each session's encoding kept ready (see `grpc/listing.rs`).

fn main() -> Result<(), Box<dyn std::error::Error>> {
    println!("cargo:rerun-if-changed=../proto");
    let descriptors = protox::compile(["holdfast/host/v1/host.proto"], ["../proto"])?;
    tonic_prost_build::configure()
        .build_client(false)
        .codec_path("::holdfast_api::codec::SliceCodec")
        .extern_path(".holdfast.host.v1", "::holdfast_api::proto::host::v1")
        .extern_path(
            ".holdfast.host.v1.ListSessionsResponse",
            "crate::grpc::listing::ListSessionsResponse",
        )
        .compile_fds(descriptors)?;
    Ok(())
}
