//! A model written as a layer (`use OpenAi;`) is reported as a model that goes after
//! `run`, in the name written, and not as a type that is not a middleware (which would
//! name the provider's generic type): the models a user may write in a `use` line are
//! middleware in name only.

use crate::stack::Placement;

/// The models a user may write in a `use` line are middleware in name only: their
/// placement says they are models, so `use OpenAi;` is reported as a model given as a
/// layer, in the user's words, and not as a type that is not a middleware (which
/// would name the provider's generic type). Their options leave the stack unchanged;
/// a stack with one never compiles.
macro_rules! model_as_layer {
    ($($(#[$meta:meta])* [$($generics:tt)*] $model:ty => $name:literal;)*) => {$(
        $(#[$meta])*
        #[doc(hidden)]
        impl<$($generics)*> crate::stack::Middleware for $model {
            type Options = crate::stack::NotAMiddleware;
            const PLACEMENT: Placement = Placement::model($name);
            fn options() -> crate::stack::NotAMiddleware {
                crate::stack::NotAMiddleware
            }
        }
    )*};
}

model_as_layer! {
    #[cfg(feature = "http")]
    [F: crate::providers::WireFormat] crate::providers::HttpModel<F> => "HttpModel";
    [] crate::providers::ScriptedModel => "ScriptedModel";
    [] crate::providers::Replay => "Replay";
    [] crate::providers::AnyModel => "AnyModel";
}
