//! Answers requests that are neither gRPC nor grpc-web, in words.
//!
//! Such requests come from `curl` with JSON, a browser pointed at the port,
//! or a client of the Connect protocol. They get an answer that says what
//! this port speaks, before any service tries to read them.
//!
//! A POST of another content type is `415 Unsupported Media Type`, as the
//! gRPC over HTTP/2 specification asks of servers. Any other method is
//! `405 Method Not Allowed`. OPTIONS never comes here: CORS answers it.
//! gRPC over HTTP/1.1, which gRPC does not define and tonic does not
//! serve, is `505 HTTP Version Not Supported`.

use holdfast_plumbing::admission::{Admit, AdmitLayer};
use http::{HeaderValue, Method, Request, Response, StatusCode, Version, header};
use tonic::body::Body;

/// Answers what is not gRPC or grpc-web before any service sees it.
#[derive(Debug, Clone, Copy, Default)]
pub struct GrpcOnly;

impl GrpcOnly {
    /// The layer that applies it to every request.
    pub fn layer() -> AdmitLayer<Self> {
        AdmitLayer::new(Self)
    }
}

impl Admit for GrpcOnly {
    type Refusal = Response<Body>;

    fn admit<B>(&self, request: &Request<B>) -> Result<(), Response<Body>> {
        refusal(request).map_or(Ok(()), Err)
    }
}

/// The content types of grpc-web: tonic-web's, spelled as it accepts them.
const GRPC_WEB: [&str; 4] = [
    "application/grpc-web",
    "application/grpc-web+proto",
    "application/grpc-web-text",
    "application/grpc-web-text+proto",
];

/// What this port speaks, for the people who find it some other way.
const SPOKEN: &str = "This is holdfast's host-service. It speaks gRPC (HTTP/2, content type \
application/grpc) and grpc-web (content type application/grpc-web, application/grpc-web+proto, \
application/grpc-web-text or application/grpc-web-text+proto, over HTTP/1.1 or HTTP/2), with \
server reflection. Try: `grpcurl -plaintext ADDRESS list`, or `holdfast ls`.";

/// The answer to a request no service here could take; `None` to pass it on.
fn refusal<B>(request: &Request<B>) -> Option<Response<Body>> {
    let content_type = request.headers().get(header::CONTENT_TYPE);
    let kind = content_type.map_or(Kind::Other, Kind::of);
    let (status, why) = if request.method() != Method::POST {
        (
            StatusCode::METHOD_NOT_ALLOWED,
            format!("Every call is a POST, not {}.", request.method()),
        )
    } else if kind == Kind::Other {
        let sent = match content_type.map(HeaderValue::to_str) {
            None => "no content type".to_owned(),
            Some(Ok(sent)) => format!("content type {sent}"),
            Some(Err(_)) => "a content type that is not plain ASCII".to_owned(),
        };
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
    let mut answer = Response::new(Body::new(format!("{why}\n{SPOKEN}\n")));
    *answer.status_mut() = status;
    let headers = answer.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    // The answer repeats what the request said: never to be read as HTML.
    headers.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    if status == StatusCode::METHOD_NOT_ALLOWED {
        headers.insert(header::ALLOW, HeaderValue::from_static("POST, OPTIONS"));
    }
    Some(answer)
}

/// The protocol a content type names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// `application/grpc`, `application/grpc+proto`, ...
    ///
    /// Tonic reads any of them. Media types are case-insensitive and may
    /// carry parameters.
    Grpc,
    /// One of [`GRPC_WEB`], exactly: tonic-web refuses any other.
    GrpcWeb,
    /// Anything else.
    Other,
}

impl Kind {
    /// On every call's path: no allocation.
    fn of(content_type: &HeaderValue) -> Self {
        const GRPC: &[u8] = b"application/grpc";
        let bytes = content_type.as_bytes();
        if GRPC_WEB.iter().any(|web| web.as_bytes() == bytes) {
            return Self::GrpcWeb;
        }
        let media = bytes.split(|&byte| byte == b';').next().unwrap_or_default();
        let media = media.trim_ascii();
        match media.split_at_checked(GRPC.len()) {
            Some((head, rest))
                if head.eq_ignore_ascii_case(GRPC)
                    && rest.first().is_none_or(|&byte| byte == b'+') =>
            {
                Self::Grpc
            }
            _ => Self::Other,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn answer(method: Method, version: Version, content_type: Option<&[u8]>) -> Option<StatusCode> {
        let mut request = Request::builder().method(method).version(version);
        if let Some(content_type) = content_type {
            let value = HeaderValue::from_bytes(content_type).expect("a header value");
            request = request.header(header::CONTENT_TYPE, value);
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
        ] {
            assert_eq!(
                answer(Method::POST, version, Some(content_type.as_bytes())),
                None,
                "{content_type}"
            );
        }
    }

    #[test]
    fn everything_else_is_told_what_this_port_speaks() {
        let (h1, h2) = (Version::HTTP_11, Version::HTTP_2);
        for (version, content_type) in [
            (h2, Some(&b"application/json"[..])),
            (h1, Some(b"application/proto")),
            (h2, Some(b"application/grpcx")),
            (h2, Some(b"application/grpc-webx")),
            // Spellings tonic-web would refuse further in.
            (h1, Some(b"application/grpc-web+json")),
            (h1, Some(b"application/GRPC-Web")),
            (h1, Some(b"application/grpc-web; charset=utf-8")),
            (h2, Some(b"application/grpc\xff")),
            (h1, None),
        ] {
            assert_eq!(
                answer(Method::POST, version, content_type),
                Some(StatusCode::UNSUPPORTED_MEDIA_TYPE),
                "{content_type:?}"
            );
        }
        for (version, content_type) in [(h1, None), (h2, Some(&b"application/grpc"[..]))] {
            assert_eq!(
                answer(Method::GET, version, content_type),
                Some(StatusCode::METHOD_NOT_ALLOWED),
                "{content_type:?}"
            );
        }
        assert_eq!(
            answer(Method::POST, h1, Some(b"application/grpc")),
            Some(StatusCode::HTTP_VERSION_NOT_SUPPORTED)
        );
    }
}
