//! Compiles `proto/` into tonic and prost code.
//!
//! It uses protox (pure Rust, no system `protoc`). It also writes the encoded
//! descriptor set that the reflection services serve.

use std::path::PathBuf;

const PROTOS: &[&str] = &[
    "proto/holdfast/daemon/v1/daemon.proto",
    "proto/holdfast/errors/v1/errors.proto",
    "proto/holdfast/host/v1/host.proto",
];

fn main() -> Result<(), Box<dyn std::error::Error>> {
    println!("cargo:rerun-if-changed=proto");
    let descriptors = protox::compile(PROTOS, ["proto"])?;
    let out_dir = PathBuf::from(std::env::var_os("OUT_DIR").ok_or("OUT_DIR is not set")?);
    let descriptor_path = out_dir.join("holdfast_descriptor.bin");
    std::fs::write(
        &descriptor_path,
        prost::Message::encode_to_vec(&descriptors),
    )?;
    tonic_prost_build::configure()
        .bytes(".")
        .codec_path("crate::codec::SliceCodec")
        .compile_fds(descriptors)?;
    Ok(())
}
