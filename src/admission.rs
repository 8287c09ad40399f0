//! One tower layer for "may this request in?", shared by both servers: the
//! daemon's peer-uid check and the host-service's token and Host checks
//! say who is admitted; this answers everyone else with their status
//! before any service runs.

use std::task::{Context, Poll};

use futures_util::future::{Either, Ready, ready};

/// A rule for requests: `Ok` admits, `Err` is the answer instead.
pub trait Admit: Clone {
    fn admit<B>(&self, request: &http::Request<B>) -> Result<(), tonic::Status>;
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
    ResBody: Default,
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
            Err(status) => Either::Left(ready(Ok(status.into_http()))),
        }
    }
}
