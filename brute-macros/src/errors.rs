//! `Errors`: what a macro's passes found, every error collected.

/// The errors found so far, combined into one `syn::Error`, so that a macro reports
/// every mistake at once.
#[derive(Default)]
pub(crate) struct Errors(Option<syn::Error>);

impl Errors {
    /// Adds `err` to the others.
    pub(crate) fn push(&mut self, err: syn::Error) {
        match &mut self.0 {
            Some(all) => all.combine(err),
            None => self.0 = Some(err),
        }
    }

    /// Whether nothing was found.
    pub(crate) fn is_empty(&self) -> bool {
        self.0.is_none()
    }

    /// All the errors found, if any.
    pub(crate) fn into_error(self) -> Option<syn::Error> {
        self.0
    }
}
