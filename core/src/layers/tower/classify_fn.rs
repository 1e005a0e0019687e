//! A closure as a classifier whose type can be named.

use crate::assessment::Assessment;
use crate::layers::classify::ClassifyResult;

/// A closure `Fn(&Result<Res, Err>) -> Assessment` as a [`ClassifyResult`]
/// in a type that can be named: the classifier type of a tower layer given
/// a closure (`BreakerLayer<ClassifyFn<F>>`).
#[derive(Clone, Copy)]
pub struct ClassifyFn<F>(pub F);

impl<F> core::fmt::Debug for ClassifyFn<F> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("ClassifyFn").finish_non_exhaustive()
    }
}

impl<Res, Err, F: Fn(&Result<Res, Err>) -> Assessment> ClassifyResult<Res, Err> for ClassifyFn<F> {
    fn classify(&self, result: &Result<Res, Err>) -> Assessment {
        (self.0)(result)
    }
}
