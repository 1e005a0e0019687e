//! `ready` and `oneshot` as inherent methods of every tripwire service,
//! doing what tower's `ServiceExt::{ready, oneshot}` do.
//!
//! Why: when a stack does not fit (a classifier that cannot judge the
//! inner service's responses, an error that is not `std::error::Error`, a
//! request that cannot be cloned for retries), rustc's method lookup drops
//! tower's methods without saying why, and `svc.oneshot(req)` fails with
//! E0599 "method exists but its trait bounds were not satisfied". An
//! inherent method is found first, and its `Self: Service<Req>` bound is
//! checked after lookup, so the same mistake is reported as the bound
//! that is missing, with that trait's own note on the fix.

use core::fmt;
use core::marker::PhantomData;
use core::pin::Pin;
use core::task::{Context, Poll};

use tower_service::Service;

/// The two methods, for one service type (`$ty<$params>`, with the
/// bounds its struct declares).
macro_rules! call_patterns {
    ($ty:ident $(< $($param:ident),* >)? $(where $($bound:tt)*)?) => {
        impl$(<$($param),*>)? $ty$(<$($param),*>)? $(where $($bound)*)? {
            /// Waits until the service can take a call, as tower's
            /// `ServiceExt::ready`, with a future that is `Unpin` as
            /// tower's is. It comes before tower's (so that a stack that
            /// does not fit names the bound it misses: see the
            /// [module docs](crate::tower#diagnostics)); where it is the
            /// only method `ServiceExt` served, that import goes unused.
            pub fn ready<Req>(&mut self) -> $crate::layers::tower::call_patterns::Ready<'_, Self, Req>
            where
                Self: tower_service::Service<Req>,
            {
                $crate::layers::tower::call_patterns::Ready::new(self)
            }

            /// Waits until the service is ready, then makes one call, as
            /// tower's `ServiceExt::oneshot`. It borrows the service, where
            /// tower's takes it (so its future cannot outlive the service,
            /// to be spawned): tower's comes first wherever it applies
            /// (with `ServiceExt` in scope), and this one answers only where
            /// tower's does not, to name the missing bound.
            pub async fn oneshot<Req>(
                &mut self,
                req: Req,
            ) -> Result<
                <Self as tower_service::Service<Req>>::Response,
                <Self as tower_service::Service<Req>>::Error,
            >
            where
                Self: tower_service::Service<Req>,
            {
                core::future::poll_fn(|cx| <Self as tower_service::Service<Req>>::poll_ready(self, cx)).await?;
                <Self as tower_service::Service<Req>>::call(self, req).await
            }
        }
    };
}

pub(crate) use call_patterns;

/// The future of a tripwire service's own `ready`: the service, once it
/// can take a call.
#[must_use = "futures do nothing unless polled"]
pub struct Ready<'a, S, Req> {
    service: Option<&'a mut S>,
    _request: PhantomData<fn(Req)>,
}

impl<'a, S, Req> Ready<'a, S, Req> {
    pub(crate) fn new(service: &'a mut S) -> Self {
        Self { service: Some(service), _request: PhantomData }
    }
}

impl<S, Req> fmt::Debug for Ready<'_, S, Req> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Ready").finish_non_exhaustive()
    }
}

impl<'a, S: Service<Req>, Req> Future for Ready<'a, S, Req> {
    type Output = Result<&'a mut S, S::Error>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let service = self.service.as_mut().expect("Ready polled after completion");
        core::task::ready!(service.poll_ready(cx))?;
        Poll::Ready(Ok(self.service.take().expect("taken only here")))
    }
}
