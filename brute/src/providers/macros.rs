//! The glue every wire format has, written once: its `Codec` type with the
//! constructor, the request-parameter builder methods (on the codec and on the
//! [`HttpModel`](super::HttpModel) over it), its `StreamDecoder` type, and the
//! [`WireFormat`](super::WireFormat) and [`StreamDecode`](super::StreamDecode) impls
//! that connect them to the HTTP model. A format's own module then holds only what
//! differs: its encoder, decoder, stream assembly and wire shapes.

/// Declares a wire format's request parameters once: each becomes a builder method of
/// its `Codec` (setting a field of its `Arc`'d parameters) and one of the
/// [`HttpModel`] over that codec (delegating to it).
macro_rules! request_params {
    ($codec:ident {
        $( $(#[$doc:meta])* fn $name:ident($($arg:ident: $ty:ty),+) |$p:ident| $set:expr; )*
    }) => {
        impl $codec {
            $( $(#[$doc])* pub fn $name(mut self, $($arg: $ty),+) -> Self {
                let $p = std::sync::Arc::make_mut(&mut self.params);
                $set;
                self
            } )*
        }

        #[cfg(feature = "http")]
        impl crate::providers::HttpModel<$codec> {
            $( $(#[$doc])* pub fn $name(self, $($arg: $ty),+) -> Self {
                self.with_wire(|codec| codec.$name($($arg),+))
            } )*
        }
    };
}

/// Declares a wire format's `Codec` (model name, `Arc`'d parameters, tool cache) and
/// implements [`WireFormat`](super::WireFormat) for it with the format's name, key
/// header, extra headers, endpoint and stream decoder. The codec provides
/// `fn body(&self, &Request<'_>) -> Result<Vec<u8>, ModelError>` (the request body) and
/// `fn completion(response, place) -> Result<Completion, ModelError>` (the reply in a
/// `response` without an `error` object).
macro_rules! codec {
    (
        $(#[$codec_doc:meta])*
        pub struct $codec:ident for $name:literal {
            key_header: $key_header:expr,
            headers: $headers:expr,
            endpoint: $endpoint:path,
            $(call_url: $call_url:path,)?
            params: $params:ty,
            response: $response:ty as $what:literal,
            stream: $stream:ident,
        }
    ) => {
        $(#[$codec_doc])*
        ///
        /// Cloning is cheap; clones share the cache of serialised tool schemas.
        #[derive(Clone, Debug)]
        pub struct $codec {
            model: std::sync::Arc<str>,
            params: std::sync::Arc<$params>,
            tools: crate::providers::ToolsCache,
        }

        impl $codec {
            /// A codec for `model` with the default parameters.
            pub fn new(model: impl Into<std::sync::Arc<str>>) -> Self {
                $codec {
                    model: model.into(),
                    params: std::sync::Arc::default(),
                    tools: crate::providers::ToolsCache::default(),
                }
            }

            /// The model name sent in requests.
            pub fn model(&self) -> &str {
                &self.model
            }

            /// The JSON request body for `messages` and `tools`; `stream` asks for an
            /// event stream.
            pub fn encode(
                &self,
                messages: &[crate::message::Message],
                tools: &[crate::tool::ToolSpec],
                stream: bool,
            ) -> Result<Vec<u8>, crate::error::ModelError> {
                self.body(&crate::providers::Request::new(messages, tools).stream(stream))
            }

            /// The JSON request body for `request` (which may carry an
            /// [`OutputSchema`](crate::structured::OutputSchema)).
            pub fn encode_request(
                &self,
                request: &crate::providers::Request<'_>,
            ) -> Result<Vec<u8>, crate::error::ModelError> {
                self.body(request)
            }

            /// Decodes a non-streamed response body (an error object in it is an
            /// error). `place` names the source in errors.
            pub fn decode(
                body: &[u8],
                place: &str,
            ) -> Result<crate::model::Completion, crate::error::ModelError> {
                let response: $response = crate::providers::read_body(body, place, $what)?;
                if let Some(error) = &response.error {
                    return Err(crate::providers::errors::body_error(place, error));
                }
                Self::completion(response, place)
            }

            /// A decoder for a streamed response (a
            /// [`StreamDecode`](crate::providers::StreamDecode)), with the default event
            /// size limit
            /// ([`DEFAULT_MAX_EVENT_BYTES`](crate::providers::DEFAULT_MAX_EVENT_BYTES)).
            /// `place` names the source in errors.
            pub fn stream_decoder(
                place: impl Into<String>,
            ) -> <Self as crate::providers::WireFormat>::Stream {
                $stream::new(place.into(), crate::providers::DEFAULT_MAX_EVENT_BYTES)
            }
        }

        impl crate::providers::WireFormat for $codec {
            type Stream = $stream;
            const NAME: &'static str = $name;
            const KEY_HEADER: (&'static str, &'static str) = $key_header;
            const HEADERS: &'static [(&'static str, &'static str)] = $headers;

            fn model(&self) -> &str {
                &self.model
            }

            fn endpoint(base_url: &str) -> String {
                $endpoint(base_url)
            }

            $(
                fn call_url<'a>(&self, endpoint: &'a str, stream: bool) -> std::borrow::Cow<'a, str> {
                    $call_url(self, endpoint, stream)
                }
            )?

            fn encode(
                &self,
                request: &crate::providers::Request<'_>,
            ) -> Result<Vec<u8>, crate::error::ModelError> {
                self.body(request)
            }

            fn decode(
                body: &[u8],
                place: &str,
            ) -> Result<crate::model::Completion, crate::error::ModelError> {
                $codec::decode(body, place)
            }

            fn stream_decoder(place: String, max_event_bytes: usize) -> $stream {
                $stream::new(place, max_event_bytes)
            }
        }

    };
}

/// Declares a wire format's `StreamDecoder`: the event-stream parser over the
/// format's assembly state (an [`Assemble`](super::stream::Assemble)), with `feed`
/// and `finish` and the [`StreamDecode`](super::StreamDecode) impl.
macro_rules! stream_decoder {
    ($(#[$stream_doc:meta])* pub struct $stream:ident($state:ty);) => {
        $(#[$stream_doc])*
        #[derive(Debug)]
        pub struct $stream(crate::providers::stream::Decoding<$state>);

        impl $stream {
            /// A decoder for the stream at `place`, refusing events over
            /// `max_event_bytes`.
            pub(super) fn new(place: String, max_event_bytes: usize) -> Self {
                $stream(crate::providers::stream::Decoding::new(place, max_event_bytes))
            }

            /// Feeds the next bytes of the stream (cut anywhere); deltas are emitted
            /// on `env`.
            pub fn feed(
                &mut self,
                bytes: &[u8],
                env: &crate::env::Env,
            ) -> Result<(), crate::error::ModelError> {
                self.0.feed(bytes, env)
            }

            /// Ends the stream and returns the assembled completion; a stream that
            /// stopped before its end is a [`ModelError::Connection`](crate::ModelError::Connection).
            pub fn finish(
                self,
                env: &crate::env::Env,
            ) -> Result<crate::model::Completion, crate::error::ModelError> {
                self.0.finish(env)
            }
        }

        impl crate::providers::StreamDecode for $stream {
            fn feed(
                &mut self,
                bytes: &[u8],
                env: &crate::env::Env,
            ) -> Result<(), crate::error::ModelError> {
                self.0.feed(bytes, env)
            }

            fn finish(
                self,
                env: &crate::env::Env,
            ) -> Result<crate::model::Completion, crate::error::ModelError> {
                self.0.finish(env)
            }

            fn redact(&mut self, secrets: &[std::sync::Arc<str>]) {
                self.0.redact(secrets);
            }

            fn kept(&self) -> usize {
                self.0.kept()
            }
        }
    };
}

/// Declares a provider: the [`HttpModel`](super::HttpModel) over a codec under the
/// provider's name, with a `new` that reads the API root and the key from the
/// environment.
///
/// The type is defined in the provider's module `model` (visible to `providers`, which
/// re-exports it as `providers::$model`, its one public path) and imported into the
/// provider's module for the code and the doc links there.
macro_rules! http_model {
    (
        $(#[$model_doc:meta])*
        pub type $model:ident = HttpModel<$codec:ident>
            from env($base_var:literal, $base:path, $key_var:literal) if feature $feature:literal;
    ) => {
        /// The provider's model type, named `providers::$model` outside.
        #[cfg(feature = $feature)]
        pub(in crate::providers) mod model {
            use super::*;

            $(#[$model_doc])*
            ///
            /// Its `Debug` output never shows the key, and no error it returns carries it.
            pub type $model = crate::providers::HttpModel<$codec>;
        }

        #[cfg(feature = $feature)]
        pub(crate) use model::$model;

        #[cfg(feature = $feature)]
        impl $model {
            #[doc = concat!("`model` at the API root in `", $base_var, "` (the provider's own")]
            #[doc = concat!("address when unset), with the key in `", $key_var, "` (requests go")]
            /// without a key when it is unset).
            pub fn new(model: impl Into<std::sync::Arc<str>>) -> Self {
                Self::from_env($codec::new(model), $base_var, $base, $key_var)
            }
        }

    };
}
