//! A request over a server's size limit, refused as gRPC's status codes
//! have it.
//!
//! The refusal is RESOURCE_EXHAUSTED, as grpc-go, grpc-java and gRPC core
//! answer, with holdfast's reason and the limit. tonic answers OUT_OF_RANGE
//! instead, which means a value outside a valid range, and gives no reason.
//! Both servers share this.
//!
//! A request refused before any handler ran is answered with a status
//! alone, which [`OversizeLayer`] rewrites. A request stream's later
//! message over the limit reaches its handler as an error, which
//! [`relabelled`] rewrites.

use std::task::{Context, Poll};

use futures_util::TryFutureExt;
use futures_util::future::MapOk;
use tonic::{Code, Status};

use holdfast_api::error_details::{Reason, Refusal};

/// tonic's message for an oversized request, up to the sizes.
const TOO_LARGE: &str = "Error, decoded message length too large: found ";

/// Wraps services so that their oversize refusals are holdfast's.
#[derive(Debug, Clone, Copy, Default)]
pub struct OversizeLayer;

impl<S> tower::Layer<S> for OversizeLayer {
    type Service = Oversize<S>;

    fn layer(&self, inner: S) -> Self::Service {
        Oversize { inner }
    }
}

/// The service [`OversizeLayer`] makes.
#[derive(Debug, Clone)]
pub struct Oversize<S> {
    inner: S,
}

impl<S, ReqBody, ResBody> tower::Service<http::Request<ReqBody>> for Oversize<S>
where
    S: tower::Service<http::Request<ReqBody>, Response = http::Response<ResBody>>,
{
    type Response = S::Response;
    type Error = S::Error;
    type Future = MapOk<S::Future, fn(http::Response<ResBody>) -> http::Response<ResBody>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: http::Request<ReqBody>) -> Self::Future {
        self.inner.call(request).map_ok(rewrite_response)
    }
}

/// An answer that is only tonic's oversize refusal, as holdfast's.
///
/// Such an answer is a trailers-only response.
fn rewrite_response<B>(mut response: http::Response<B>) -> http::Response<B> {
    let headers = response.headers_mut();
    let refusal = Status::from_header_map(headers).and_then(|status| oversize_refusal(&status));
    if let Some(refusal) = refusal {
        headers.remove("grpc-status-details-bin");
        if let Err(error) = refusal.add_header(headers) {
            tracing::warn!(%error, "rewriting an oversize refusal failed");
        }
    }
    response
}

/// A status from reading a request stream's next message, relabelled.
///
/// tonic's oversize refusal becomes holdfast's. Anything else stays as it
/// is.
pub fn relabelled(status: Status) -> Status {
    oversize_refusal(&status).unwrap_or(status)
}

/// holdfast's refusal for `status`, if it is tonic's oversize refusal.
fn oversize_refusal(status: &Status) -> Option<Status> {
    if status.code() != Code::OutOfRange {
        return None;
    }
    let sizes = status.message().strip_prefix(TOO_LARGE)?;
    // "17825800 bytes, the limit is: 16777216 bytes"
    let number =
        |text: &str| -> Option<u64> { text.trim().strip_suffix("bytes")?.trim().parse().ok() };
    let (found, limit) = sizes.split_once(", the limit is: ")?;
    let (found, limit) = (number(found)?, number(limit)?);
    Some(
        Refusal::new(
            Code::ResourceExhausted,
            Reason::RequestTooLarge,
            format!("the request is {found} bytes, over this service's limit of {limit} bytes"),
        )
        .about("limitBytes", limit)
        .into(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use holdfast_api::error_details::reason_of;

    fn tonics(found: u64, limit: u64) -> Status {
        Status::out_of_range(format!(
            "{TOO_LARGE}{found} bytes, the limit is: {limit} bytes"
        ))
    }

    #[test]
    fn only_the_oversize_refusal_is_rewritten() {
        let answer = rewrite_response(tonics(17_825_800, 16_777_216).into_http::<()>());
        let status = Status::from_header_map(answer.headers()).expect("a status");
        assert_eq!(status.code(), Code::ResourceExhausted);
        assert_eq!(
            status.message(),
            "the request is 17825800 bytes, over this service's limit of 16777216 bytes"
        );
        let (reason, metadata) = reason_of(&status).expect("a reason");
        assert_eq!(reason, "REQUEST_TOO_LARGE");
        assert_eq!(metadata["limitBytes"], "16777216");

        let other = rewrite_response(Status::out_of_range("offset past the end").into_http::<()>());
        let other = Status::from_header_map(other.headers()).expect("a status");
        assert_eq!(
            (other.code(), other.message()),
            (Code::OutOfRange, "offset past the end")
        );
        assert_eq!(relabelled(tonics(5, 4)).code(), Code::ResourceExhausted);
        assert_eq!(
            relabelled(Status::out_of_range(TOO_LARGE)).code(),
            Code::OutOfRange
        );
        assert_eq!(relabelled(Status::internal("x")).code(), Code::Internal);
    }
}
