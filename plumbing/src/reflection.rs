//! gRPC server reflection over every holdfast proto.
//!
//! It serves v1 for buf and newer tools, and v1alpha for grpcurl. It covers
//! grpc.health.v1 and the google.rpc error details too. It lists only the
//! services a server actually serves.

use tonic_reflection::pb::{v1, v1alpha};

/// The v1 and v1alpha reflection services listing `service_names` (and
/// grpc.health.v1.Health).
pub fn services(
    service_names: &[&'static str],
) -> (
    v1::server_reflection_server::ServerReflectionServer<
        impl v1::server_reflection_server::ServerReflection,
    >,
    v1alpha::server_reflection_server::ServerReflectionServer<
        impl v1alpha::server_reflection_server::ServerReflection,
    >,
) {
    let builder = || {
        service_names.iter().fold(
            tonic_reflection::server::Builder::configure()
                .register_encoded_file_descriptor_set(holdfast_api::proto::FILE_DESCRIPTOR_SET)
                .register_encoded_file_descriptor_set(tonic_health::pb::FILE_DESCRIPTOR_SET)
                // google.rpc.ErrorInfo and BadRequest, so a tool can show a
                // status's details (src/error_details.rs).
                .register_encoded_file_descriptor_set(tonic_types::pb::FILE_DESCRIPTOR_SET)
                .with_service_name("grpc.health.v1.Health"),
            |builder, name| builder.with_service_name(*name),
        )
    };
    // Every descriptor set is compiled in, so building cannot fail at run time.
    let v1 = builder()
        .build_v1()
        .expect("the embedded descriptor sets are valid");
    let v1alpha = builder()
        .build_v1alpha()
        .expect("the embedded descriptor sets are valid");
    (v1, v1alpha)
}
