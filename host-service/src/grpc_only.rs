//! Requests that are neither gRPC nor grpc-web (`curl` with JSON, a
//! browser pointed at the port, a client of the Connect protocol) get an
//! answer that says, in words, what this port speaks. Without it they got
//! tonic's bare `400` over HTTP/1.1, or, over HTTP/2, their body read as
//! gRPC and an `INTERNAL` "Unexpected EOF decoding stream".
//!
//! A POST of another content type is `415 Unsupported Media Type`, as the
//! gRPC over HTTP/2 specification asks of servers; any other method is
//! `405 Method Not Allowed` with `Allow: POST`; gRPC over HTTP/1.1, which
//! cannot work (it needs trailers), is `505 HTTP Version Not Supported`.

use std::task::{Context, Poll};

use futures_util::future::{Either, Ready, ready};
use http::{HeaderValue, Method, Request, Response, StatusCode, Version, header};
use tonic::body::Body;

/// Answers what is not gRPC or grpc-web before any service sees it.
#[derive(Debug, Clone, Copy, Default)]
pub struct GrpcOnlyLayer;

impl<S> tower::Layer<S> for GrpcOnlyLayer {
    type Service = GrpcOnly<S>;

    fn layer(&self, inner: S) -> Self::Service {
        GrpcOnly { inner }
    }
}

/// The service [`GrpcOnlyLayer`] makes.
#[derive(Debug, Clone)]
pub struct GrpcOnly<S> {
    inner: S,
}

impl<S, B> tower::Service<Request<B>> for GrpcOnly<S>
where
    S: tower::Service<Request<B>, Response = Response<Body>>,
{
    type Response = Response<Body>;
    type Error = S::Error;
    type Future = Either<Ready<Result<Response<Body>, S::Error>>, S::Future>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: Request<B>) -> Self::Future {
        match refusal(&request) {
            None => Either::Right(self.inner.call(request)),
            Some(answer) => Either::Left(ready(Ok(answer))),
        }
    }
}

/// What this port speaks, for the people who find it some other way.
const SPOKEN: &str = "This is holdfast's host-service. It speaks gRPC (HTTP/2, content type \
application/grpc) and grpc-web (content type application/grpc-web, \
application/grpc-web+proto or application/grpc-web-text, over HTTP/1.1 or HTTP/2), \
with server reflection. Try: `grpcurl -plaintext ADDRESS list`, or `holdfast ls`.";

/// The answer to a request no service here could take; `None` to pass it on.
fn refusal<B>(request: &Request<B>) -> Option<Response<Body>> {
    let content_type = request
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|value| value.to_str().ok());
    let kind = content_type.map_or(Kind::Other, Kind::of);
    let refused = if request.method() != Method::POST {
        (
            StatusCode::METHOD_NOT_ALLOWED,
            format!("Every call is a POST, not {}.", request.method()),
        )
    } else if kind == Kind::Other {
        let sent = content_type.map_or("no content type".to_owned(), |sent| {
            format!("content type {sent}")
        });
        (
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            format!("This request has {sent}."),
        )
    } else if kind == Kind::Grpc && request.version() < Version::HTTP_2 {
        (
            StatusCode::HTTP_VERSION_NOT_SUPPORTED,
            "gRPC needs HTTP/2 (`curl --http2-prior-knowledge`); over HTTP/1.1, use grpc-web."
                .to_owned(),
        )
    } else {
        return None;
    };
    let (status, why) = refused;
    let mut answer = Response::new(Body::new(format!("{why}\n{SPOKEN}\n")));
    *answer.status_mut() = status;
    let headers = answer.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    if status == StatusCode::METHOD_NOT_ALLOWED {
        headers.insert(header::ALLOW, HeaderValue::from_static("POST"));
    }
    Some(answer)
}

/// The protocol a content type names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// `application/grpc`, `application/grpc+proto`, ...
    Grpc,
    /// `application/grpc-web`, `application/grpc-web-text+proto`, ...
    GrpcWeb,
    /// Anything else.
    Other,
}

impl Kind {
    fn of(content_type: &str) -> Self {
        // Media types are case-insensitive, and may carry parameters. On
        // every call's path: no allocation.
        const GRPC: &str = "application/grpc";
        let media = content_type.split(';').next().unwrap_or_default().trim();
        let Some(rest) = media
            .get(..GRPC.len())
            .filter(|head| head.eq_ignore_ascii_case(GRPC))
            .map(|_| &media[GRPC.len()..])
        else {
            return Self::Other;
        };
        if rest
            .get(..4)
            .is_some_and(|web| web.eq_ignore_ascii_case("-web"))
        {
            Self::GrpcWeb
        } else if rest.is_empty() || rest.starts_with('+') {
            Self::Grpc
        } else {
            Self::Other
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn answer(method: Method, version: Version, content_type: Option<&str>) -> Option<StatusCode> {
        let mut request = Request::builder().method(method).version(version);
        if let Some(content_type) = content_type {
            request = request.header(header::CONTENT_TYPE, content_type);
        }
        refusal(&request.body(()).expect("request")).map(|answer| answer.status())
    }

    #[test]
    fn grpc_and_grpc_web_pass() {
        for (version, content_type) in [
            (Version::HTTP_2, "application/grpc"),
            (Version::HTTP_2, "application/grpc+proto"),
            (Version::HTTP_2, "Application/GRPC; charset=utf-8"),
            (Version::HTTP_11, "application/grpc-web"),
            (Version::HTTP_11, "application/grpc-web+proto"),
            (Version::HTTP_11, "application/grpc-web-text"),
            (Version::HTTP_2, "application/grpc-web-text+proto"),
            (Version::HTTP_11, "application/GRPC-Web"),
        ] {
            assert_eq!(
                answer(Method::POST, version, Some(content_type)),
                None,
                "{content_type}"
            );
        }
    }

    #[test]
    fn everything_else_is_told_what_this_port_speaks() {
        let (h1, h2) = (Version::HTTP_11, Version::HTTP_2);
        for (version, content_type) in [
            (h2, Some("application/json")),
            (h1, Some("application/proto")),
            (h2, Some("application/grpcx")),
            (h1, None),
        ] {
            assert_eq!(
                answer(Method::POST, version, content_type),
                Some(StatusCode::UNSUPPORTED_MEDIA_TYPE),
                "{content_type:?}"
            );
        }
        for (version, content_type) in [(h1, None), (h2, Some("application/grpc"))] {
            assert_eq!(
                answer(Method::GET, version, content_type),
                Some(StatusCode::METHOD_NOT_ALLOWED),
                "{content_type:?}"
            );
        }
        assert_eq!(
            answer(Method::POST, h1, Some("application/grpc")),
            Some(StatusCode::HTTP_VERSION_NOT_SUPPORTED)
        );
    }
}
