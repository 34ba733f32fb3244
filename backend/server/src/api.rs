//! Request-body extractors that turn every rejection into a `{code, message}` error, and
//! small response helpers.

use axum::extract::rejection::{FormRejection, JsonRejection};
use axum::extract::{FromRequest, Request};
use axum::http::header::{CACHE_CONTROL, CONTENT_TYPE};
use axum::http::{HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use serde::de::DeserializeOwned;

use crate::error::Error;

/// Default cap on JSON request bodies.
pub const MAX_JSON_BODY_BYTES: usize = 1024 * 1024;
/// Cap for bodies that legitimately carry a whole transcript or a file.
pub const MAX_LARGE_BODY_BYTES: usize = 64 * 1024 * 1024;

/// `axum::Json` with rejections mapped to 400/413/415 `{code, message}`.
#[derive(Debug, Clone, Copy, Default)]
pub struct ApiJson<T>(pub T);

fn json_rejection(e: JsonRejection) -> Error {
    match e {
        JsonRejection::MissingJsonContentType(_) => Error::Client {
            status: StatusCode::UNSUPPORTED_MEDIA_TYPE,
            code: "unsupported_media_type",
            message: "Send the body as JSON with `Content-Type: application/json`.".into(),
            retry_after_secs: None,
        },
        JsonRejection::JsonSyntaxError(e) => {
            Error::bad_request("invalid_json", format!("The body is not valid JSON: {}", e.body_text()))
        }
        JsonRejection::JsonDataError(e) => Error::bad_request("invalid_request", e.body_text()),
        JsonRejection::BytesRejection(e) if e.status() == StatusCode::PAYLOAD_TOO_LARGE => {
            Error::too_large("body_too_large", "The request body is too large.")
        }
        other => Error::bad_request("invalid_request", other.body_text()),
    }
}

impl<T: DeserializeOwned, S: Send + Sync> FromRequest<S> for ApiJson<T> {
    type Rejection = Error;

    async fn from_request(req: Request, state: &S) -> Result<Self, Error> {
        axum::Json::<T>::from_request(req, state).await.map(|j| Self(j.0)).map_err(json_rejection)
    }
}

/// A JSON body kept as its bytes, for a handler that deserializes it borrowing from them (an
/// import reads each message's fields in place); the same checks and errors as [`ApiJson`].
#[derive(Debug, Clone)]
pub struct ApiJsonBytes(pub bytes::Bytes);

impl ApiJsonBytes {
    /// The body as `T`, which may borrow from it.
    pub fn parse<'a, T: serde::Deserialize<'a>>(&'a self) -> Result<T, Error> {
        serde_json::from_slice(&self.0).map_err(|e| match e.classify() {
            serde_json::error::Category::Data => Error::bad_request("invalid_request", e.to_string()),
            _ => Error::bad_request("invalid_json", format!("The body is not valid JSON: {e}")),
        })
    }
}

/// True for `application/json` and `application/*+json` (parameters such as `charset` aside).
fn is_json_content_type(value: &str) -> bool {
    let essence = value.split(';').next().unwrap_or("").trim();
    let Some((kind, subtype)) = essence.split_once('/') else { return false };
    let subtype = subtype.to_ascii_lowercase();
    kind.eq_ignore_ascii_case("application") && (subtype == "json" || subtype.ends_with("+json"))
}

impl<S: Send + Sync> FromRequest<S> for ApiJsonBytes {
    type Rejection = Error;

    async fn from_request(req: Request, state: &S) -> Result<Self, Error> {
        let json = req.headers().get(CONTENT_TYPE).and_then(|v| v.to_str().ok()).is_some_and(is_json_content_type);
        if !json {
            return Err(json_rejection(JsonRejection::MissingJsonContentType(Default::default())));
        }
        match bytes::Bytes::from_request(req, state).await {
            Ok(body) => Ok(Self(body)),
            Err(e) if e.status() == StatusCode::PAYLOAD_TOO_LARGE => {
                Err(Error::too_large("body_too_large", "The request body is too large."))
            }
            Err(e) => Err(Error::bad_request("invalid_request", e.body_text())),
        }
    }
}

/// A body accepted as JSON or as an HTML form (`application/x-www-form-urlencoded`).
#[derive(Debug, Clone, Copy, Default)]
pub struct JsonOrForm<T>(pub T);

impl<T: DeserializeOwned, S: Send + Sync> FromRequest<S> for JsonOrForm<T> {
    type Rejection = Error;

    async fn from_request(req: Request, state: &S) -> Result<Self, Error> {
        let is_form = req
            .headers()
            .get(CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.starts_with("application/x-www-form-urlencoded"));
        if is_form {
            axum::Form::<T>::from_request(req, state).await.map(|f| Self(f.0)).map_err(|e| match e {
                FormRejection::BytesRejection(b) if b.status() == StatusCode::PAYLOAD_TOO_LARGE => {
                    Error::too_large("body_too_large", "The request body is too large.")
                }
                other => Error::bad_request("invalid_request", other.body_text()),
            })
        } else {
            ApiJson::<T>::from_request(req, state).await.map(|j| Self(j.0))
        }
    }
}

/// Response helper for handlers that only acknowledge.
pub fn no_content() -> Response {
    let mut response = StatusCode::NO_CONTENT.into_response();
    response.headers_mut().insert(CACHE_CONTROL, HeaderValue::from_static("no-store"));
    response
}

/// What [`gate`] needs: the shared state and the heap trimmer of large bodies.
pub struct Gate {
    pub state: crate::state::AppState,
    pub trimmer: std::sync::Arc<crate::memory::Trimmer>,
}

/// The API's one middleware, in order: CORS for app frames (preflights answered here), the
/// bearer token verified once (kept as [`crate::auth::Verified`] for the route's extractors),
/// cross-site refusal ([`crate::auth::csrf::check`]), the agent token's route table
/// ([`crate::auth::agent::check`]), and a heap trim after a large body. One layer rather than
/// one per check: axum clones and boxes every layer of the matched route on each request.
/// Routes that need no identity (`/api/health`, `/api/ready`, `/api/version`) are not behind it.
pub async fn gate(
    axum::extract::State(gate): axum::extract::State<std::sync::Arc<Gate>>,
    mut request: Request,
    next: axum::middleware::Next,
) -> Response {
    let from_frame = crate::web::is_from_frame(request.headers());
    let checked = if from_frame && request.method() == axum::http::Method::OPTIONS {
        Err(StatusCode::NO_CONTENT.into_response())
    } else {
        // A token that does not verify is the route's to refuse (with its own code), or to
        // ignore when the route needs none.
        let claims = crate::auth::bearer_of(request.headers())
            .and_then(|token| gate.state.keys.verify(token).ok())
            .map(std::sync::Arc::new);
        let checked = crate::auth::csrf::check(&request, &gate.state, claims.as_deref())
            .and_then(|()| crate::auth::agent::check(&request, claims.as_deref()))
            .map_err(IntoResponse::into_response);
        if let Some(claims) = claims {
            request.extensions_mut().insert(crate::auth::Verified(claims));
        }
        checked
    };
    let mut response = match checked {
        Err(response) => response,
        Ok(()) => {
            let large_in = crate::memory::is_large_request(&request);
            let response = next.run(request).await;
            if large_in || crate::memory::is_large_response(&response) {
                gate.trimmer.large_request();
            }
            response
        }
    };
    if from_frame {
        crate::web::add_frame_cors(response.headers_mut());
    }
    response
}
