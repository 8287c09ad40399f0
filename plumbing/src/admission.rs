//! One tower layer for "may this request in?", shared by both servers.
//!
//! Rules say who is admitted. They are the daemon's peer-uid check, the
//! host-service's token and Host checks, and its refusal of what is not
//! gRPC. This layer answers everyone else before any service runs.

use std::task::{Context, Poll};

use futures_util::future::{Either, Ready, ready};

/// A rule for requests: `Ok` admits, `Err` is the answer instead.
pub trait Admit: Clone {
    /// What a refused request is answered with.
    ///
    /// It is a gRPC status, or an HTTP response of its own.
    type Refusal;

    fn admit<B>(&self, request: &http::Request<B>) -> Result<(), Self::Refusal>;
}

/// A refusal as the HTTP response that carries it.
pub trait IntoAnswer<ResBody> {
    fn into_answer(self) -> http::Response<ResBody>;
}

impl<ResBody: Default> IntoAnswer<ResBody> for tonic::Status {
    fn into_answer(self) -> http::Response<ResBody> {
        self.into_http()
    }
}

impl<ResBody> IntoAnswer<ResBody> for http::Response<ResBody> {
    fn into_answer(self) -> http::Response<ResBody> {
        self
    }
}

/// Wraps services in an [`Admit`] rule.
#[derive(Debug, Clone)]
pub struct AdmitLayer<A> {
    rule: A,
}

impl<A> AdmitLayer<A> {
    pub fn new(rule: A) -> Self {
        Self { rule }
    }
}

impl<S, A: Clone> tower::Layer<S> for AdmitLayer<A> {
    type Service = Admitted<S, A>;

    fn layer(&self, inner: S) -> Self::Service {
        Admitted {
            inner,
            rule: self.rule.clone(),
        }
    }
}

/// The service [`AdmitLayer`] makes.
#[derive(Debug, Clone)]
pub struct Admitted<S, A> {
    inner: S,
    rule: A,
}

impl<S, A, ReqBody, ResBody> tower::Service<http::Request<ReqBody>> for Admitted<S, A>
where
    S: tower::Service<http::Request<ReqBody>, Response = http::Response<ResBody>>,
    A: Admit,
    A::Refusal: IntoAnswer<ResBody>,
{
    type Response = S::Response;
    type Error = S::Error;
    type Future = Either<Ready<Result<Self::Response, Self::Error>>, S::Future>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: http::Request<ReqBody>) -> Self::Future {
        match self.rule.admit(&request) {
            Ok(()) => Either::Right(self.inner.call(request)),
            Err(refusal) => Either::Left(ready(Ok(refusal.into_answer()))),
        }
    }
}
