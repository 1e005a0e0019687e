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

/// The two methods, for one service type (`$ty<$params>`, with the
/// bounds its struct declares).
macro_rules! call_patterns {
    ($ty:ident < $($param:ident),* > $(where $($bound:tt)*)?) => {
        impl<$($param),*> $ty<$($param),*> $(where $($bound)*)? {
            /// Waits until the service can take a call, as tower's
            /// `ServiceExt::ready`. It comes before tower's (so that a
            /// stack that does not fit names the bound it misses: see the
            /// [module docs](crate::tower#diagnostics)); where it is the
            /// only method `ServiceExt` served, that import goes unused.
            pub async fn ready<Req>(
                &mut self,
            ) -> Result<&mut Self, <Self as tower_service::Service<Req>>::Error>
            where
                Self: tower_service::Service<Req>,
            {
                core::future::poll_fn(|cx| <Self as tower_service::Service<Req>>::poll_ready(self, cx)).await?;
                Ok(self)
            }

            /// Waits until the service is ready, then makes one call, as
            /// tower's `ServiceExt::oneshot`. It borrows the service, where
            /// tower's takes it: tower's comes first wherever it applies
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
